"""connect_task as a context manager: succeeds by hand, or lets an exception end the task."""
from backchannel_subagent import connect_task

with connect_task() as task:
    task.progress(50)
    if (task.input or {}).get("explode"):
        raise RuntimeError("boum 💥")
    task.succeed({"manual": True}, model_used="none")
