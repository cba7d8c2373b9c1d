"""Reports progress 0, 10, … 100 with non-ASCII steps; shows what a child process inherits of the hand-off."""
import subprocess
import sys

from backchannel_subagent import run_agent

SHOW_ENV = "import os; print(' '.join(sorted(k for k in os.environ if k.startswith('CURSOR_'))))"


def work(task):
    for percent in range(0, 101, 10):
        task.progress(percent, step=f"étape {percent} ✓ 步骤")
    child = subprocess.run([sys.executable, "-c", SHOW_ENV], capture_output=True, text=True, check=True)
    task.meta(model_used="模型-ü")
    name = (task.input or {}).get("name", "nobody")
    return {"greeting": f"你好, {name}", "channel": task.channel, "child_env": child.stdout.strip()}


run_agent(work)
