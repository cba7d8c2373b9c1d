"""The exceptions a sub-agent meets: what to raise, and what the runtime raises at you."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional


class AgentRuntimeError(Exception):
    """The runtime cannot do what was asked: no task id, no connection for ``ask``, a second final payload.

    The message says what went wrong and what to do about it.
    """


class AgentError(Exception):
    """Raise this from a handler to fail the task with a clean message (no ``Type:`` prefix).

    Args:
        message: what went wrong, for the person reading the task (``data.message`` of the payload).
        retryable: ``False`` makes the failure final even when the task allows retries
            (the payload's ``retryable`` field). ``None`` leaves the decision to the broker.
        data: extra fields merged into the ``error`` payload's ``data`` (an exit code, a session id…).

    Example::

        raise AgentError("the repository has no main branch", retryable=False, data={"branches": names})
    """

    def __init__(self, message: str, *, retryable: Optional[bool] = None, data: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(message)
        #: ``False``: do not retry this failure. ``None``: the task's retry policy decides.
        self.retryable: Optional[bool] = retryable
        #: Extra fields for the ``error`` payload's ``data``.
        self.data: Dict[str, Any] = dict(data or {})


class Cancelled(Exception):
    """The broker cancelled the task (the person, a timeout or a stall); ``reason`` says which.

    Raised by :meth:`Task.check_cancelled`, :meth:`Task.sleep` and :meth:`Task.ask` once the
    cancel arrived. Let it propagate out of the handler: :func:`run_agent` turns it into the
    ``cancelled`` payload. (``async def`` handlers get :class:`asyncio.CancelledError` instead.)
    """

    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__(f"task cancelled: {reason}")
        #: The broker's ``reason``: ``cancelled``, ``timeout``, ``stalled``, … or a person's words.
        self.reason: str = reason


class AskError(AgentRuntimeError):
    """:meth:`Task.ask` got no answer: nobody answered in time, the connection closed, or there is none."""


class ToolCallError(AgentRuntimeError):
    """:meth:`Task.call_tool` got no content: the caller answered with an error (the tool failed, or was
    not offered), no result came within ``timeout``, the connection closed, or there is none.

    ``tool`` is the name of the tool called.
    """

    def __init__(self, message: str, *, tool: str = "") -> None:
        super().__init__(message)
        #: The name of the tool that was called.
        self.tool: str = tool
