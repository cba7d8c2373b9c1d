"""Never looks at the cancel: the runtime must end the task itself within the grace period."""
import os
import time

from backchannel_subagent import run_agent


def work(task):
    task.progress(0, pid=os.getpid())
    for _ in range(600):  # at most a minute
        time.sleep(0.1)
    return "ran to the end"


run_agent(work)
