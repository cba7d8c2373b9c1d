"""Works silently for ``input.seconds``: only the runtime's heartbeats keep the broker's watchdog quiet."""
import time

from backchannel_subagent import run_agent


def work(task):
    time.sleep(task.input["seconds"])
    return {"slept": task.input["seconds"]}


run_agent(work)
