"""Calls the tool its input names (``name``, ``arguments``) and returns the content, or the error it got."""
from backchannel_subagent import ToolCallError, run_agent


def work(task):
    spec = task.input
    try:
        return {"offered": [tool["name"] for tool in task.tools], "content": task.call_tool(spec["name"], spec.get("arguments"), timeout=spec.get("timeout"))}
    except ToolCallError as error:
        return {"offered": [tool["name"] for tool in task.tools], "error": str(error), "tool": error.tool}


run_agent(work)
