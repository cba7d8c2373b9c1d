"""The agent's view of its task: input, progress, cancellation, questions, calls to the tools its caller
hosts, and the one final payload."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import sys
import threading
import time
import traceback
from types import TracebackType
from typing import Any, Callable, Dict, List, Mapping, MutableMapping, Optional, Sequence, Tuple, Type, Union

from ._link import Link, connect_with_retry
from ._locate import TaskLocation, locate_task, remove_hand_off
from ._version import __version__
from ._wire import Message, drop_broken_output, encode, iso_now, print_to_stdout, warn, write_spool, write_stderr
from .errors import AgentError, AgentRuntimeError, AskError, Cancelled, ToolCallError

#: How long to wait for ``welcome`` + ``input`` after ``hello``. Input can be large (tested with 10 MB).
HANDSHAKE_TIMEOUT_S = 30.0
#: How long to wait for the broker's ``ack`` of the final payload before spooling it.
ACK_TIMEOUT_S = 5.0
#: How many characters of the traceback go into an ``error`` payload's ``data.traceback``.
TRACEBACK_TAIL_CHARS = 2000
#: Longest attachment name (docs/protocol.md §4.1): it becomes a file name where results are saved.
MAX_ATTACHMENT_NAME = 200
_NOT_IN_A_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


#: The ``meta`` fields that report what a run spent (read by the broker as docs/protocol.md §4 says).
USAGE_META = frozenset({"token_usage", "usage", "cost_usd", "total_cost_usd", "num_turns"})


def is_attachment_name(name: object) -> bool:
    """A plain file name: 1–200 characters, no ``/``, ``\\`` or control characters, not ``.`` or ``..``."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_ATTACHMENT_NAME
        and name not in (".", "..")
        and not _NOT_IN_A_NAME.search(name)
    )


class Task:
    """What a handler gets: the task's input, and the ways to report back while working.

    Obtain one from :func:`run_agent` (which calls your handler with it) or :func:`connect_task`.
    Every method is thread-safe: report from worker threads too.

    Attributes:
        id: the task id.
        attempt: the attempt number, from 1 (a retry is a new process with a new attempt).
        input: the task's input (any JSON value); ``None`` when it has none, and in stdout mode.
        tools: the tools the task's caller hosts (docs/protocol.md §7), each a dict with ``name``,
            ``description`` (optional) and ``input_schema``; call one with :meth:`call_tool`. Empty when
            none were offered, and in stdout mode.
        cancel_event: set when the broker cancels the task. Wait on it, or pass it to your own loops.
        cancel_reason: the broker's reason once cancelled (``cancelled``, ``timeout``, ``stalled``, …).
    """

    def __init__(self, location: TaskLocation, *, agent: str, ack_timeout: float, heartbeat_ms: Optional[int]) -> None:
        self.id: str = location.task_id
        self.attempt: int = location.attempt
        self.input: Any = None
        self.tools: List[Dict[str, Any]] = []
        self.cancel_event: threading.Event = threading.Event()
        self.cancel_reason: Optional[str] = None
        self._location = location
        self._agent = agent
        self._ack_timeout = ack_timeout
        self._heartbeat_s = (heartbeat_ms if heartbeat_ms is not None else location.heartbeat_ms or 0) / 1000
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._link: Optional[Link] = None
        self._handshake = threading.Event()
        self._acked = threading.Event()
        self._ack_received = False
        self._final_sent = False
        self._closing = threading.Event()
        self._extra_meta: Dict[str, Any] = {}
        self._asks: Dict[str, Dict[str, Any]] = {}
        self._ask_counter = 0
        self._tool_calls: Dict[str, Dict[str, Any]] = {}
        self._tool_call_counter = 0
        self._cancel_callbacks: List[Callable[[], object]] = []
        self._attachments: List[Tuple[str, bytes, str]] = []

    # --- state -------------------------------------------------------------------------------

    @property
    def channel(self) -> str:
        """``"socket"`` while connected to the broker; ``"stdout"`` when reporting through ``data:`` lines."""
        link = self._link
        return "socket" if link is not None and not link.closed else "stdout"

    @property
    def is_cancelled(self) -> bool:
        """True once the broker cancelled the task."""
        return self.cancel_event.is_set()

    def check_cancelled(self) -> None:
        """Raises :class:`Cancelled` once the task was cancelled; call it between steps."""
        if self.cancel_event.is_set():
            raise Cancelled(self.cancel_reason or "cancelled")

    def sleep(self, seconds: float) -> None:
        """Like :func:`time.sleep`, but raises :class:`Cancelled` as soon as the task is cancelled."""
        if self.cancel_event.wait(max(0.0, seconds)):
            raise Cancelled(self.cancel_reason or "cancelled")

    # --- reporting ---------------------------------------------------------------------------

    def progress(self, percent: Optional[float], **data: Any) -> None:
        """Reports progress: ``percent`` (0–100, clamped; ``None`` for indeterminate) plus any fields.

        Sends a ``partial`` payload whose ``data.progress`` moves the progress bar::

            task.progress(40, step="parsing", file=name)
        """
        if percent is not None:
            data["progress"] = min(100, max(0, percent))
        self.partial(data)

    def partial(self, data: Any, meta: Optional[Mapping[str, Any]] = None) -> None:
        """Sends a ``partial`` payload with any JSON data (text so far, a step, a preview). The broker keeps the last.

        ``meta`` goes with it: ``token_usage`` (``{"input": n, "output": n}``, the run's total so far),
        ``cost_usd`` and ``num_turns`` report what the run has spent, which the broker shows live and
        checks against the task's budget at once (as the TypeScript SDK's ``partial(data, meta)``)::

            task.partial({"text": draft}, meta={"token_usage": {"input": 1200, "output": 300}, "cost_usd": 0.02})
        """
        payload: Message = {"task_id": self.id, "status": "partial", "data": data}
        if meta:
            payload["meta"] = dict(meta)
        self._send(payload)

    def heartbeat(self) -> None:
        """Says "alive" without data. The runtime sends these by itself every ``CURSOR_HEARTBEAT_MS``."""
        self._send({"task_id": self.id, "status": "heartbeat"})

    def meta(self, **fields: Any) -> None:
        """Adds operational facts to the final payload's ``meta``: ``model_used``, ``token_usage``, anything else.

        Usage (``token_usage``, ``usage``, ``cost_usd``, ``total_cost_usd``, ``num_turns``: the run's
        total so far) is also sent at once, in a ``partial`` without data, so the broker counts it
        against the task's budget during the run, not only at its end::

            task.meta(token_usage={"input": 1200, "output": 300}, cost_usd=0.02)
        """
        with self._lock:
            self._extra_meta.update(fields)
        usage = {name: value for name, value in fields.items() if name in USAGE_META}
        if usage:
            # No `data`: the broker keeps the last partial's data; only the usage is new.
            self._send({"task_id": self.id, "status": "partial", "meta": usage})

    def log(self, text: str) -> None:
        """Writes a line to the task's log (stderr, which the broker keeps). ``print`` works too."""
        write_stderr(text if text.endswith("\n") else text + "\n")

    def ask(self, question: str, choices: Optional[Sequence[str]] = None, timeout: Optional[float] = None) -> str:
        """Asks the person a question (the panel, or ``backchannel run`` on a terminal) and waits for the answer.

        Heartbeats go on while waiting. Raises :class:`AskError` when nobody answered within the
        broker's ask timeout (or ``timeout`` seconds) or there is no connection (stdout mode), and
        :class:`Cancelled` when the task is cancelled while waiting.
        """
        self.check_cancelled()
        link = self._link
        if link is None or link.closed:
            raise AskError("cannot ask: no connection to the broker (stdout mode)")
        pending: Dict[str, Any] = {"event": threading.Event()}
        with self._lock:
            self._ask_counter += 1
            ask_id = f"q{self._ask_counter}"
            self._asks[ask_id] = pending
        message: Message = {"type": "ask", "task_id": self.id, "ask_id": ask_id, "question": question}
        if choices is not None:
            message["choices"] = [str(choice) for choice in choices]
        try:
            if not link.send(message):
                raise AskError("cannot ask: the connection to the broker closed")
            if not pending["event"].wait(timeout):
                raise AskError(f"no answer within {timeout} s")
            self.check_cancelled()
            if "answer" not in pending:
                raise AskError(str(pending.get("error", "the connection to the broker closed")))
            return str(pending["answer"])
        finally:
            with self._lock:
                self._asks.pop(ask_id, None)

    async def ask_async(self, question: str, choices: Optional[Sequence[str]] = None, timeout: Optional[float] = None) -> str:
        """:meth:`ask` for ``async def`` handlers: waits on a worker thread, so the event loop keeps running."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self.ask(question, choices, timeout))

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Calls ``name``, one of the tools the task's caller hosts (:attr:`tools`), and returns its content.

        ``arguments`` is a JSON object, as the tool's ``input_schema`` describes. The content is any
        JSON value, usually a string. Heartbeats go on while waiting, and the broker's watchdog leaves
        a task waiting on its caller alone. Several threads may call tools at once.

        Raises:
            ToolCallError: the caller answered with an error (the tool failed, or was not offered), no
                result came within ``timeout`` seconds, the connection closed, or there is none (stdout mode).
            Cancelled: the task was cancelled while waiting.
        """
        self.check_cancelled()
        if not isinstance(name, str) or not name:
            raise ToolCallError("call_tool() needs a tool name", tool=str(name))
        args: Dict[str, Any] = dict(arguments or {})
        link = self._link
        if link is None or link.closed:
            raise ToolCallError("cannot call a tool: no connection to the broker (stdout mode)", tool=name)
        pending: Dict[str, Any] = {"event": threading.Event()}
        with self._lock:
            self._tool_call_counter += 1
            call_id = f"call_{self._tool_call_counter}"
            self._tool_calls[call_id] = pending
        try:
            # Raises TypeError/ValueError (nothing sent) when the arguments are not JSON.
            line = encode({"type": "tool_call", "task_id": self.id, "call_id": call_id, "name": name, "arguments": args})
            if not link.send_encoded(line):
                raise ToolCallError(f"tool call {name}: the connection to the broker closed", tool=name)
            if not pending["event"].wait(timeout):
                raise ToolCallError(f"tool call {name} got no result within {timeout} s", tool=name)
            self.check_cancelled()
            if "content" not in pending:
                raise ToolCallError(f"tool call {name} failed: {pending.get('error', 'the connection to the broker closed')}", tool=name)
            return pending["content"]
        finally:
            with self._lock:
                self._tool_calls.pop(call_id, None)

    async def call_tool_async(self, name: str, arguments: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """:meth:`call_tool` for ``async def`` handlers: waits on a worker thread, so the event loop keeps running."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self.call_tool(name, arguments, timeout))

    def attach(self, name: str, value: Union[str, bytes, bytearray, memoryview]) -> None:
        """Attaches a big value to the final payload, sent beside its JSON line at wire speed.

        A ``str`` comes back to the caller as a string (UTF-8), bytes as bytes (a Node ``Buffer``).
        Keep ``data`` small and put the bulk here (docs/protocol.md §4.1); on the stdout fallback the
        bytes travel as base64 (slower, whole). Attaching a name again replaces it.

        Raises:
            AgentRuntimeError: after the final payload, for a name that is not a plain file name, or a
                value that is neither text nor bytes.
        """
        if self._final_sent:
            raise AgentRuntimeError("attach() after the final payload was sent")
        if not is_attachment_name(name):
            raise AgentRuntimeError(f"attachment name {name!r} is not a plain file name")
        if isinstance(value, str):
            entry = (name, value.encode("utf-8", "surrogatepass"), "utf8")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            entry = (name, bytes(value), "binary")
        else:
            raise AgentRuntimeError("attach() takes a str or bytes")
        with self._lock:
            self._attachments = [a for a in self._attachments if a[0] != name] + [entry]

    # --- the final payload -------------------------------------------------------------------

    def succeed(self, data: Any = None, **meta: Any) -> bool:
        """Sends the ``success`` payload with ``data`` as the result and waits for the broker's ack.

        ``meta`` fields are merged into the payload's ``meta``. Returns True when the broker
        acknowledged it; otherwise the payload was printed on stdout and spooled (see the README).
        Raises TypeError or ValueError (and sends nothing) when ``data`` is not JSON-serialisable.
        """
        return self._finish("success", data, meta)

    def fail(self, error: BaseException, *, retryable: Optional[bool] = None, data: Optional[Mapping[str, Any]] = None) -> bool:
        """Sends the ``error`` payload for ``error`` and waits for the broker's ack.

        ``data.message`` is ``"Type: text"`` (just the text for :class:`AgentError`), ``data.name`` the
        exception's class and ``data.traceback`` the tail of its traceback; an :class:`AgentError`'s
        ``data`` and the ``data`` argument are merged in. ``retryable=False`` (or the error's own
        ``retryable``) tells the broker not to try again.
        """
        extra: Dict[str, Any] = dict(error.data) if isinstance(error, AgentError) else {}
        if retryable is None and isinstance(error, AgentError):
            retryable = error.retryable
        text = str(error)
        message = text if isinstance(error, AgentError) else f"{type(error).__name__}: {text}" if text else type(error).__name__
        details: Dict[str, Any] = {"message": message, "name": type(error).__name__}
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        if error.__traceback__ is not None:
            details["traceback"] = trace[-TRACEBACK_TAIL_CHARS:]
        details.update(extra)
        details.update(data or {})
        return self._finish("error", details, {}, retryable)

    def cancelled(self, data: Any = None) -> bool:
        """Sends the ``cancelled`` payload (default data: ``{"message": …, "reason": …}``) and waits for the ack."""
        reason = self.cancel_reason or "cancelled"
        return self._finish("cancelled", {"message": f"task cancelled: {reason}", "reason": reason} if data is None else data, {})

    @property
    def finished(self) -> bool:
        """True once a final payload was sent (later ones raise, later partials are dropped)."""
        return self._final_sent

    def close(self) -> None:
        """Stops heartbeats and closes the connection. Safe to call twice."""
        self._closing.set()
        link = self._link
        if link is not None:
            link.close()

    def __enter__(self) -> "Task":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType]) -> None:
        """Closes the task; an exception escaping the block becomes the final payload if none was sent."""
        try:
            if error is not None and not self._final_sent:
                if self.is_cancelled or isinstance(error, (Cancelled, asyncio.CancelledError, KeyboardInterrupt)):
                    self.cancelled()
                elif isinstance(error, Exception):
                    self.fail(error)
        finally:
            self.close()

    # --- inside ------------------------------------------------------------------------------

    def _open(self) -> None:
        ipc_path, token = self._location.ipc_path, self._location.token
        if ipc_path and token:
            try:
                link = Link(connect_with_retry(ipc_path), self._on_message, self._on_link_closed)
                self._link = link
                link.start()
                link.send({"type": "hello", "task_id": self.id, "token": token, "agent": self._agent})
                if not self._handshake.wait(HANDSHAKE_TIMEOUT_S) or link.closed:
                    raise OSError("the broker sent no input")
            except OSError as error:
                warn(f"cannot reach the broker at {ipc_path} ({error}); reporting on stdout instead")
                if self._link is not None:
                    self._link.close()
                self._link = None
        if self._heartbeat_s > 0:
            threading.Thread(target=self._heartbeat_loop, name="backchannel-heartbeat", daemon=True).start()

    def _heartbeat_loop(self) -> None:
        while not self._closing.wait(self._heartbeat_s) and not self._final_sent:
            self.heartbeat()

    def _on_message(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "welcome":
            attempt = message.get("attempt")
            if isinstance(attempt, int) and attempt > 0:
                self.attempt = attempt
            tools = message.get("tools")
            if isinstance(tools, list):
                self.tools = [tool for tool in tools if isinstance(tool, dict)]
        elif kind == "input":
            self.input = message.get("data")
            self._handshake.set()
        elif kind == "cancel":
            self._on_cancel(str(message.get("reason") or "cancelled"))
        elif kind == "ack":
            self._ack_received = True
            self._acked.set()
        elif kind == "answer":
            with self._lock:
                pending = self._asks.get(str(message.get("ask_id")))
            if pending is not None:
                if message.get("error") is None and "answer" in message:
                    pending["answer"] = message["answer"]
                else:
                    pending["error"] = str(message.get("error") or "empty answer")
                pending["event"].set()
        elif kind == "tool_result":
            with self._lock:
                waiting = self._tool_calls.get(str(message.get("call_id")))
            if waiting is not None:
                if message.get("error") is None:
                    waiting["content"] = message.get("content")
                else:
                    waiting["error"] = str(message.get("error"))
                waiting["event"].set()
        elif kind == "reject":
            warn(f"the broker rejected this connection: {message.get('reason')}")
        # Unknown types are ignored, as the protocol asks.

    def _on_cancel(self, reason: str) -> None:
        with self._lock:
            if self.cancel_event.is_set():
                return
            self.cancel_reason = reason
            self.cancel_event.set()
            waiting = [pending["event"] for pending in self._asks.values()]
            waiting += [pending["event"] for pending in self._tool_calls.values()]
            callbacks = list(self._cancel_callbacks)
        for event in waiting:
            event.set()
        for callback in callbacks:
            callback()

    def _on_link_closed(self) -> None:
        # If the broker died, its stdout and stderr pipes went with it: let them go before anyone prints.
        drop_broken_output()
        # The broker closed the connection: that ends every wait.
        self._handshake.set()
        self._acked.set()
        with self._lock:
            waiting = list(self._asks.values()) + list(self._tool_calls.values())
        for pending in waiting:
            pending.setdefault("error", "the connection to the broker closed")
            pending["event"].set()

    def _add_cancel_callback(self, callback: Callable[[], object]) -> None:
        """Runs ``callback`` (on the reader thread) when the cancel arrives; at once if it already has."""
        with self._lock:
            already = self.cancel_event.is_set()
            if not already:
                self._cancel_callbacks.append(callback)
        if already:
            callback()

    def _send(self, payload: Message) -> None:
        if self._final_sent:
            return
        line = encode(payload)
        link = self._link
        if link is None or not link.send_encoded(line):
            print_to_stdout(line)

    def _finish(self, status: str, data: Any, meta: Mapping[str, Any], retryable: Optional[bool] = None) -> bool:
        with self._lock:
            if self._final_sent:
                raise AgentRuntimeError("a final payload was already sent for this task")
            duration_ms = round((time.monotonic() - self._started) * 1000)
            payload: Message = {
                "task_id": self.id,
                "status": status,
                "data": data,
                "meta": {"timestamp": iso_now(), "duration_ms": duration_ms, **self._extra_meta, **meta},
            }
            if retryable is not None:
                payload["retryable"] = retryable
            attachments = list(self._attachments)
            headers = [{"name": name, "bytes": len(body), "encoding": encoding} for name, body, encoding in attachments]
            # Raises before anything is sent when the data is not JSON.
            line = encode({**payload, "attachments": headers} if attachments else payload)
            self._final_sent = True
        self._closing.set()
        link = self._link
        if link is not None and link.send_encoded(line, [body for _, body, _ in attachments]):
            self._acked.wait(self._ack_timeout)
            if self._ack_received:
                return True
            warn("no acknowledgement from the broker; writing the result to stdout and the spool")
        # No broker to confirm it: print it (a duplicate counts once) and spool it for the next broker.
        # Raw bytes cannot follow a line there: the attachments travel inline, base64-encoded.
        if attachments:
            inline = [{**header, "base64": base64.b64encode(body).decode("ascii")} for header, (_, body, _) in zip(headers, attachments)]
            line = encode({**payload, "attachments": inline})
        self._spool(line)
        print_to_stdout(line)
        return False

    def _spool(self, line: bytes) -> None:
        spool_dir = self._location.spool_dir
        if not spool_dir:
            return
        try:
            write_spool(spool_dir, self.id, line)
        except OSError as error:
            warn(f"cannot write the spool file: {error}")


def connect_task(
    argv: Optional[Sequence[str]] = None,
    env: Optional[MutableMapping[str, str]] = None,
    *,
    keep_hand_off_env: bool = False,
    agent: Optional[str] = None,
    ack_timeout: float = ACK_TIMEOUT_S,
    heartbeat_ms: Optional[int] = None,
) -> Task:
    """Connects to the task without the :func:`run_agent` wrapper: you send the final payload yourself.

    Reads the hand-off (``--task-id=`` in ``argv``, default ``sys.argv[1:]``, then ``CURSOR_*`` in
    ``env``, default ``os.environ``), removes the hand-off variables from ``env`` unless
    ``keep_hand_off_env``, connects (falling back to stdout when there is no usable socket), receives
    the input and starts heartbeats. Use it as a context manager so the connection is closed and an
    escaping exception still ends the task::

        with connect_task() as task:
            task.progress(50)
            task.succeed({"answer": 42})

    Args:
        agent: free text sent in ``hello`` (default ``backchannel-subagent-python/<version>``).
        ack_timeout: seconds to wait for the broker's ack of the final payload before spooling it.
        heartbeat_ms: overrides the heartbeat interval the broker asked for (0: none).

    Raises:
        AgentRuntimeError: there is no task id (the agent was not started by Backchannel).
    """
    environ: MutableMapping[str, str] = os.environ if env is None else env
    location = locate_task(sys.argv[1:] if argv is None else argv, environ)
    # Read once, then remove, so processes this agent starts do not inherit the token.
    if not keep_hand_off_env:
        remove_hand_off(environ)
    task = Task(location, agent=agent or f"backchannel-subagent-python/{__version__}", ack_timeout=ack_timeout, heartbeat_ms=heartbeat_ms)
    task._open()
    return task
