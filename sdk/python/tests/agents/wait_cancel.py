"""Works in small steps until cancelled (a sync handler with task.sleep, or async with asyncio.sleep)."""
import asyncio
import os
import sys

from backchannel_subagent import run_agent


def work(task):
    task.progress(0, pid=os.getpid())
    for _ in range(1200):  # at most a minute
        task.sleep(0.05)
    return "never cancelled"


async def work_async(task):
    task.progress(0, pid=os.getpid())
    for _ in range(1200):
        await asyncio.sleep(0.05)
    return "never cancelled"


run_agent(work_async if "--async" in sys.argv else work)
