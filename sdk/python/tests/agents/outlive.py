"""Keeps working after its broker is killed, then finishes: the result must land in the spool.

With --chatty it first works on for 1.5 s: progress, heartbeats, task.log() and print(). Its stdout
and stderr are pipes of the dead broker: every one of those writes meets a broken pipe, and none may
end the agent (nor fail the interpreter's last flush of stdout at exit).
"""
import os
import sys
import time

from backchannel_subagent import run_agent

CHATTY = "--chatty" in sys.argv


def work(task):
    task.progress(10, pid=os.getpid())
    for _ in range(3000):  # at most a minute: wait until the broker is gone
        if task.channel == "stdout":
            break
        time.sleep(0.02)
    if not CHATTY:
        task.progress(90, step="après la panne")  # to a closed stdout pipe: must not break the agent
        return {"survived": "überlebt ✓", "channel": task.channel}
    steps = 0
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # heartbeats go out on their own thread meanwhile
        steps += 1
        task.progress(50, step=steps)
        if steps % 5 == 0:
            task.log(f"still working, step {steps}")
            print(f"plain output, step {steps}")
        time.sleep(0.02)
    return {"survived": True, "steps_after_the_broker_died": steps}


run_agent(work)
