"""Returns its input whole, with its length: for the 10 MB round trip."""
from backchannel_subagent import run_agent

run_agent(lambda task: {"blob": task.input["blob"], "chars": len(task.input["blob"])})
