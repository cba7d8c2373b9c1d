"""Keeps working after its broker is killed, then finishes: the result must land in the spool."""
import os
import time

from backchannel_subagent import run_agent


def work(task):
    task.progress(10, pid=os.getpid())
    for _ in range(3000):  # at most a minute: wait until the broker is gone
        if task.channel == "stdout":
            break
        time.sleep(0.02)
    task.progress(90, step="après la panne")  # to a closed stdout pipe: must not break the agent
    return {"survived": "überlebt ✓", "channel": task.channel}


run_agent(work)
