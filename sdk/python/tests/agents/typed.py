"""An agent written with full type hints: mypy --strict must accept it against the installed package."""
from __future__ import annotations

import asyncio
from typing import Dict

from backchannel_subagent import AgentError, Task, connect_task, run_agent


async def work(task: Task) -> Dict[str, int]:
    task.progress(50, step="halfway")
    task.meta(model_used="none", token_usage={"input": 1, "output": 2})
    if task.input is None:
        raise AgentError("no input", retryable=False, data={"hint": "pass --input"})
    answer: str = await task.ask_async("Which?", choices=["a", "b"])
    await asyncio.sleep(0)
    return {"length": len(answer)}


def by_hand() -> None:
    with connect_task() as task:
        task.check_cancelled()
        acked: bool = task.succeed({"ok": True})
        task.log(f"acked: {acked}")


if __name__ == "__main__":
    run_agent(work)
