"""``run_agent``: runs a handler as the task, and ends the task from what the handler did."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import threading
import traceback
from typing import Any, Awaitable, Callable, MutableMapping, Optional, Sequence, TypeVar, Union

from ._task import ACK_TIMEOUT_S, Task, connect_task
from ._wire import warn
from .errors import AgentRuntimeError, Cancelled

T = TypeVar("T")
Handler = Callable[[Task], Union[T, Awaitable[T]]]

#: Exit codes: like ``backchannel run``'s (0 success, 1 error, 2 usage, 130 cancelled as after Ctrl-C).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
#: After a cancel, how long the handler gets to stop by itself before the runtime sends ``cancelled``
#: and exits. Shorter than the broker's default 3 s grace, so the payload lands before the kill.
CANCEL_GRACE_S = 1.5


def run_agent(
    handler: Handler[Any],
    argv: Optional[Sequence[str]] = None,
    env: Optional[MutableMapping[str, str]] = None,
    *,
    keep_hand_off_env: bool = False,
    agent: Optional[str] = None,
    ack_timeout: float = ACK_TIMEOUT_S,
    heartbeat_ms: Optional[int] = None,
    exit: bool = True,
) -> int:
    """Runs a sub-agent: connects, receives the input, calls ``handler(task)`` and reports how it ended.

    - The return value (any JSON value) becomes the ``success`` payload's ``data``.
    - An exception becomes an ``error`` payload (message, class name and traceback tail in ``data``;
      see :meth:`Task.fail`); raise :class:`AgentError` for a clean message or ``retryable=False``.
    - A cancel from the broker sets ``task.cancel_event``; :meth:`Task.check_cancelled`,
      :meth:`Task.sleep` and :meth:`Task.ask` then raise :class:`Cancelled`, and an ``async def``
      handler is cancelled with :class:`asyncio.CancelledError`. Either way the task ends
      ``cancelled``. A handler that ignores the cancel for ``CANCEL_GRACE_S`` seconds is cut short:
      the runtime sends ``cancelled`` and exits the process.

    ``handler`` may be a plain function or an ``async def`` (run with :func:`asyncio.run`)::

        def work(task):
            task.progress(50, step="halfway")
            return {"answer": 42}

        run_agent(work)

    The options are :func:`connect_task`'s. With ``exit=True`` (the default) the process exits with
    0 (success), 1 (error), 2 (no task id) or 130 (cancelled); with ``exit=False`` that code is returned.
    """
    try:
        task = connect_task(argv, env, keep_hand_off_env=keep_hand_off_env, agent=agent, ack_timeout=ack_timeout, heartbeat_ms=heartbeat_ms)
    except AgentRuntimeError as error:
        warn(str(error))
        return _leave(EXIT_USAGE, exit)
    task._add_cancel_callback(lambda: _start_grace_timer(task))
    try:
        code = _run_handler(handler, task)
    finally:
        task.close()
    return _leave(code, exit)


def _run_handler(handler: Handler[Any], task: Task) -> int:
    """Calls the handler and sends the final payload its outcome calls for (unless it sent one itself)."""
    try:
        result = _call(handler, task)
        if task.is_cancelled:
            raise Cancelled(task.cancel_reason or "cancelled")
    except (Cancelled, asyncio.CancelledError, KeyboardInterrupt):
        if not task.finished:
            task.cancelled()
        return EXIT_CANCELLED
    except Exception as error:  # every failure ends in an error payload, never in silence
        if task.is_cancelled:  # e.g. a subprocess killed by the cancel: still a cancel
            if not task.finished:
                task.cancelled()
            return EXIT_CANCELLED
        warn(f"the handler failed:\n{traceback.format_exc().rstrip()}")
        if not task.finished:
            task.fail(error)
        return EXIT_ERROR
    if task.finished:
        return EXIT_OK
    try:
        task.succeed(result)
    except (TypeError, ValueError) as error:
        task.fail(AgentRuntimeError(f"the handler's result is not JSON: {error}"), retryable=False)
        return EXIT_ERROR
    return EXIT_OK


def _call(handler: Handler[Any], task: Task) -> Any:
    """Calls a plain handler directly; runs an ``async def`` one in a fresh event loop, cancellable by the broker."""
    if inspect.iscoroutinefunction(handler):
        return asyncio.run(_cancellable(handler(task), task))
    result = handler(task)
    if inspect.isawaitable(result):
        return asyncio.run(_cancellable(result, task))
    return result


async def _cancellable(awaitable: Awaitable[Any], task: Task) -> Any:
    loop = asyncio.get_running_loop()
    current = asyncio.current_task()
    assert current is not None
    task._add_cancel_callback(lambda: loop.call_soon_threadsafe(current.cancel))
    return await awaitable


def _start_grace_timer(task: Task) -> None:
    timer = threading.Timer(CANCEL_GRACE_S, _force_cancel, args=(task,))
    timer.daemon = True
    timer.start()


def _force_cancel(task: Task) -> None:
    if task.finished:
        return
    warn(f"the handler did not stop within {CANCEL_GRACE_S} s of the cancel; ending the task as cancelled")
    try:
        task.cancelled()
    except AgentRuntimeError:
        return  # the handler's own final payload won the race
    task.close()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # stdout went with the broker
    os._exit(EXIT_CANCELLED)


def _leave(code: int, exit: bool) -> int:
    if exit:
        sys.exit(code)
    return code
