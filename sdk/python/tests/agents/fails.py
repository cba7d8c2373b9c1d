"""Fails: with a plain exception (traceback in the payload) or, given {"final": true}, an AgentError."""
from backchannel_subagent import AgentError, run_agent


def parse(text):
    raise ValueError(f"données invalides ✗ {text}")


def work(task):
    if (task.input or {}).get("final"):
        raise AgentError("pas de branche « main »", retryable=False, data={"branches": ["dév"]})
    parse("输入")


run_agent(work)
