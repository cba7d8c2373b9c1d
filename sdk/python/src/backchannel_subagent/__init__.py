"""Backchannel sub-agent SDK for Python: report progress, ask questions and deliver one result to the broker.

The Python twin of Backchannel's TypeScript agent runtime (``backchannel-agents/agent-runtime``), speaking
wire protocol v1 with the standard library only::

    from backchannel_subagent import run_agent

    def work(task):
        for i, item in enumerate(task.input["items"]):
            task.check_cancelled()
            task.progress(100 * i // len(task.input["items"]), item=item)
        return {"done": len(task.input["items"])}

    run_agent(work)

Public names: :func:`run_agent`, :func:`connect_task`, :class:`Task`, :class:`AgentError`,
:class:`Cancelled`, :class:`AskError`, :class:`ToolCallError`, :class:`AgentRuntimeError`, :class:`TaskLocation` and
:func:`locate_task`.
"""

from ._locate import TaskLocation, locate_task
from ._run import CANCEL_GRACE_S, EXIT_CANCELLED, EXIT_ERROR, EXIT_OK, EXIT_USAGE, run_agent
from ._task import Task, connect_task
from ._version import __version__
from .errors import AgentError, AgentRuntimeError, AskError, Cancelled, ToolCallError

__all__ = [
    "AgentError",
    "AgentRuntimeError",
    "AskError",
    "CANCEL_GRACE_S",
    "Cancelled",
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "Task",
    "TaskLocation",
    "ToolCallError",
    "__version__",
    "connect_task",
    "locate_task",
    "run_agent",
]
