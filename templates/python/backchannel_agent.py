"""Backchannel sub-agent runtime for Python 3 (standard library only).

Speaks wire protocol v1 (docs/protocol.md) directly, so it doubles as a reference implementation
for other languages. Copy this file next to your agent and write:

    from backchannel_agent import run_agent

    def work(task):
        task.progress(50, step="halfway")
        return {"answer": 42}

    run_agent(work)

What it does for you:
- reads the task id from ``--task-id=`` first and ``CURSOR_TASK_ID`` second, and fails loudly without one;
- connects to ``CURSOR_IPC_PATH`` with a bounded retry, says hello with the token, reads
  ``welcome`` and ``input``;
- heartbeats from a background thread every ``CURSOR_HEARTBEAT_MS``;
- turns the return value into a ``success`` payload, an exception into an ``error`` payload, and a
  ``cancel`` from the broker into a ``cancelled`` payload (cooperatively through ``task.cancelled`` /
  ``task.check_cancelled()`` / ``task.sleep()``, or forcibly after ``CANCEL_GRACE_S``);
- waits for the broker's ``ack`` before exiting;
- falls back to ``data: {...}`` lines on stdout when there is no socket, and spools the final
  payload to ``CURSOR_SPOOL_DIR`` when the broker is gone.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable, Optional

__all__ = ["run_agent", "Task", "Cancelled", "AskError", "AgentError", "iso_now"]

AGENT_NAME = "backchannel-python/1.0"

# Connecting: the broker listens before it spawns us, so the first attempt nearly always works; the
# retries cover a slow filesystem or a Windows pipe refusing the first open. 8 attempts, 50 ms
# doubling to 1 s, give up after about 4 s.
CONNECT_ATTEMPTS = 8
CONNECT_FIRST_DELAY_S = 0.05
CONNECT_MAX_DELAY_S = 1.0
# How long to wait for welcome + input after hello (input can be large: tested with 10 MB).
HANDSHAKE_TIMEOUT_S = 30.0
# How long to wait for the ack after the final payload before spooling it.
ACK_TIMEOUT_S = 5.0
# After a cancel, how long the work function gets to notice before we send `cancelled` ourselves and
# exit. Shorter than the broker's default 3 s grace, so the broker gets our payload before it kills us.
CANCEL_GRACE_S = 1.5
# The broker's hand-off variables (protocol §1); removed from os.environ once read.
HANDOFF_VARIABLES = ("CURSOR_TASK_ID", "CURSOR_IPC_PATH", "CURSOR_IPC_TOKEN", "CURSOR_TASK_ATTEMPT",
                     "CURSOR_HEARTBEAT_MS", "CURSOR_SPOOL_DIR")
# Exit codes: 0 after success, 1 after error, 130 after cancelled (like SIGINT), 2 for usage errors.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


def iso_now() -> str:
    """ISO 8601 in UTC with milliseconds, the same shape the broker produces (2026-11-30T08:00:00.000Z)."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class Cancelled(Exception):
    """Raised by ``task.check_cancelled()``, ``task.sleep()`` and ``task.ask()`` once the task was cancelled."""


class AskError(Exception):
    """``task.ask()`` got no answer: nobody answered in time, or there is no connection to the broker."""


class AgentError(Exception):
    """Raise this to fail the task with a message; ``retryable=False`` makes the failure final."""

    def __init__(self, message: str, retryable: bool = True, data: Optional[dict] = None):
        super().__init__(message)
        self.retryable = retryable
        self.data = data or {}


def _read_task_id(argv: list[str]) -> Optional[str]:
    for arg in reversed(argv):
        if arg.startswith("--task-id="):
            value = arg[len("--task-id="):]
            if value:
                return value
    return os.environ.get("CURSOR_TASK_ID") or None


class _Connection:
    """One authenticated NDJSON connection to the task's endpoint (Unix socket)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._write_lock = threading.Lock()
        self._buffer = b""
        self.closed = False

    @classmethod
    def open(cls, path: str) -> "_Connection":
        delay = CONNECT_FIRST_DELAY_S
        last_error: Optional[Exception] = None
        for attempt in range(CONNECT_ATTEMPTS):
            if not hasattr(socket, "AF_UNIX"):
                raise OSError("this Python has no AF_UNIX sockets (Windows pipes are not supported here)")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                return cls(sock)
            except OSError as error:
                sock.close()
                last_error = error
                if attempt + 1 < CONNECT_ATTEMPTS:
                    time.sleep(delay)
                    delay = min(delay * 2, CONNECT_MAX_DELAY_S)
        raise OSError(f"could not connect to {path} after {CONNECT_ATTEMPTS} attempts: {last_error}")

    def send(self, message: dict) -> None:
        # ensure_ascii keeps the line pure ASCII, so the locale can never garble it.
        line = (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")
        with self._write_lock:
            self._sock.sendall(line)

    def read_line(self) -> Optional[str]:
        """The next line without its terminator, or None when the broker closed the connection.

        Splits on the newline byte, then decodes the whole line once (a multibyte character split
        across reads stays intact). Chunks of a long line are joined once, not re-copied per read:
        the input message can be 10 MB.
        """
        if b"\n" not in self._buffer:
            pieces = [self._buffer]
            while True:
                try:
                    chunk = self._sock.recv(1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    self.closed = True
                    return None
                pieces.append(chunk)
                if b"\n" in chunk:
                    break
            self._buffer = b"".join(pieces)
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.rstrip(b"\r").decode("utf-8", errors="replace")

    def close(self) -> None:
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class Task:
    """What the work function gets. Thread-safe: call it from worker threads too."""

    def __init__(self, task_id: str, attempt: int, runtime: "_Runtime"):
        self.id = task_id
        self.attempt = attempt
        #: The task's input (any JSON value), or None when there is none or no socket.
        self.input: Any = None
        #: Set when the broker cancels the task (user, timeout or stall). Check it between steps.
        self.cancelled = threading.Event()
        #: Why: "cancelled", "timeout", "stalled", … (the broker's ``reason``).
        self.cancel_reason: Optional[str] = None
        self._runtime = runtime
        self._meta: dict = {}
        self._ask_counter = 0

    @property
    def connected(self) -> bool:
        """True when talking to the broker over its socket (False in the stdout fallback)."""
        return self._runtime.conn is not None and not self._runtime.conn.closed

    def progress(self, percent: float, data: Optional[dict] = None, **fields: Any) -> None:
        """Sends a ``partial`` payload whose ``data.progress`` (0–100) moves the progress bar."""
        merged = dict(data or {}, **fields)
        merged["progress"] = max(0, min(100, percent))
        self._runtime.send_payload("partial", merged)

    def partial(self, data: Any) -> None:
        """Sends a ``partial`` payload without a percentage (text so far, a step, …)."""
        self._runtime.send_payload("partial", data)

    def meta(self, **fields: Any) -> None:
        """Merges fields (``model_used``, ``token_usage``, …) into the final payload's ``meta``."""
        self._meta.update(fields)

    def check_cancelled(self) -> None:
        """Raises :class:`Cancelled` once the task was cancelled."""
        if self.cancelled.is_set():
            raise Cancelled(self.cancel_reason or "cancelled")

    def sleep(self, seconds: float) -> None:
        """Like ``time.sleep``, but raises :class:`Cancelled` as soon as the task is cancelled."""
        if self.cancelled.wait(seconds):
            raise Cancelled(self.cancel_reason or "cancelled")

    def ask(self, question: str, choices: Optional[list[str]] = None, timeout: Optional[float] = None) -> str:
        """Asks the person a question (panel or ``backchannel run`` on a TTY) and waits for the answer.

        Raises :class:`AskError` when nobody answered within the broker's ask timeout (or ``timeout``
        seconds, if given) and :class:`Cancelled` when the task is cancelled while waiting.
        """
        with self._runtime.lock:
            self._ask_counter += 1
            ask_id = f"q{self._ask_counter}"
        return self._runtime.ask(ask_id, question, choices, timeout)


class _Runtime:
    def __init__(self, task_id: str, env: dict):
        self.task_id = task_id
        self.token = env.get("CURSOR_IPC_TOKEN")
        self.ipc_path = env.get("CURSOR_IPC_PATH")
        self.spool_dir = env.get("CURSOR_SPOOL_DIR")
        try:
            heartbeat_ms = int(env.get("CURSOR_HEARTBEAT_MS") or 0)
        except ValueError:
            heartbeat_ms = 0
        self.heartbeat_s = heartbeat_ms / 1000 if heartbeat_ms > 0 else 0.0
        self.conn: Optional[_Connection] = None
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.final_sent = threading.Event()
        #: Set by the ack or by the connection closing (either ends the wait); ack_received says which.
        self.acked = threading.Event()
        self.ack_received = False
        self.handshake = threading.Event()
        self.stopping = threading.Event()
        self.welcome: dict = {}
        self.asks: dict[str, dict] = {}
        self.task: Optional[Task] = None
        self.reject_reason: Optional[str] = None

    # --- sending -------------------------------------------------------------------------------

    def _emit(self, message: dict) -> bool:
        """Writes one message to the socket, or to stdout when there is none. False if the socket failed."""
        conn = self.conn
        if conn is not None and not conn.closed:
            try:
                conn.send(message)
                return True
            except OSError as error:
                _log(f"socket write failed ({error}); falling back to stdout")
                conn.closed = True
                if "type" in message:
                    return False  # hello/ask mean nothing on stdout
        if "type" not in message:
            sys.stdout.write("data: " + json.dumps(message, separators=(",", ":")) + "\n\n")
            sys.stdout.flush()
        return conn is None

    def send_payload(self, status: str, data: Any = None, meta: Optional[dict] = None, **extra: Any) -> bool:
        if self.final_sent.is_set():
            return False  # the first final payload decides; later ones would only be ignored
        message: dict = {"task_id": self.task_id, "status": status}
        if data is not None:
            message["data"] = data
        message["meta"] = dict(meta or {}, timestamp=iso_now())
        message.update(extra)
        return self._emit(message)

    def send_final(self, status: str, data: Any, extra_meta: dict, **extra: Any) -> None:
        with self.lock:
            if self.final_sent.is_set():
                return
            meta = dict(extra_meta)
            meta.setdefault("duration_ms", round((time.monotonic() - self.started) * 1000))
            message = {"task_id": self.task_id, "status": status, "data": data,
                       "meta": dict(meta, timestamp=iso_now()), **extra}
            delivered = self._emit(message)
            self.final_sent.set()
        if self.conn is None:
            return  # stdout fallback: the broker reads the pipe, no ack to wait for
        if delivered:
            self.acked.wait(ACK_TIMEOUT_S)
            if self.ack_received:
                return
        # No ack: the broker may be gone. Print it on stdout too (a duplicate counts once) and spool it.
        if delivered:
            sys.stdout.write("data: " + json.dumps(message, separators=(",", ":")) + "\n\n")
            sys.stdout.flush()
        self._spool(message)

    def _spool(self, message: dict) -> None:
        if not self.spool_dir:
            return
        path = os.path.join(self.spool_dir, f"{self.task_id}.json")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
            _log(f"no ack from the broker; result spooled to {path}")
        except OSError as error:
            _log(f"could not spool the result to {path}: {error}")

    # --- connection ----------------------------------------------------------------------------

    def connect(self) -> bool:
        """Connects and authenticates. False means: use the stdout fallback."""
        if not self.ipc_path or not self.token:
            return False
        try:
            self.conn = _Connection.open(self.ipc_path)
            self.conn.send({"type": "hello", "task_id": self.task_id, "token": self.token, "agent": AGENT_NAME})
        except OSError as error:
            _log(f"{error}; falling back to stdout")
            self.conn = None
            return False
        threading.Thread(target=self._read_loop, name="backchannel-reader", daemon=True).start()
        if not self.handshake.wait(HANDSHAKE_TIMEOUT_S) or (self.conn.closed and not self.welcome):
            reason = self.reject_reason or "no welcome from the broker"
            _log(f"handshake failed ({reason}); falling back to stdout")
            self.conn.close()
            self.conn = None
            return False
        return True

    def _read_loop(self) -> None:
        conn = self.conn
        assert conn is not None
        while True:
            line = conn.read_line()
            if line is None:
                break
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                _log(f"ignoring a malformed line from the broker: {line[:100]}")
                continue
            if isinstance(message, dict):
                self._dispatch(message)
        # The broker closed the connection: counts as the end of any wait.
        self.handshake.set()
        self.acked.set()
        with self.lock:
            for pending in self.asks.values():
                pending.setdefault("error", "the connection to the broker closed")
                pending["event"].set()

    def _dispatch(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "welcome":
            self.welcome = message
        elif kind == "input":
            if self.task is not None:
                self.task.input = message.get("data")
            self.handshake.set()
        elif kind == "cancel":
            self._on_cancel(str(message.get("reason") or "cancelled"))
        elif kind == "ack":
            self.ack_received = True
            self.acked.set()
        elif kind == "answer":
            with self.lock:
                pending = self.asks.get(str(message.get("ask_id")))
            if pending is not None:
                if "answer" in message and message.get("error") is None:
                    pending["answer"] = message.get("answer")
                else:
                    pending["error"] = str(message.get("error") or "no answer")
                pending["event"].set()
        elif kind == "reject":
            self.reject_reason = str(message.get("reason") or "rejected")
            _log(f"the broker rejected us: {self.reject_reason}")
        # Unknown types are ignored, as the protocol asks.

    def _on_cancel(self, reason: str) -> None:
        task = self.task
        if task is None or task.cancelled.is_set():
            return
        task.cancel_reason = reason
        task.cancelled.set()
        with self.lock:
            for pending in self.asks.values():
                pending["event"].set()
        # Give the work function a moment to stop cleanly; then end it ourselves.
        timer = threading.Timer(CANCEL_GRACE_S, self._force_cancel)
        timer.daemon = True
        timer.start()

    def _force_cancel(self) -> None:
        if self.final_sent.is_set():
            return
        _log(f"the work did not stop within {CANCEL_GRACE_S}s of the cancel; exiting")
        task = self.task
        self.send_final("cancelled", {"reason": task.cancel_reason if task else "cancelled"}, {})
        self._close()
        os._exit(EXIT_CANCELLED)

    def ask(self, ask_id: str, question: str, choices: Optional[list[str]], timeout: Optional[float]) -> str:
        task = self.task
        assert task is not None
        task.check_cancelled()
        if self.conn is None or self.conn.closed:
            raise AskError("cannot ask: no connection to the broker (stdout fallback)")
        pending: dict = {"event": threading.Event()}
        with self.lock:
            self.asks[ask_id] = pending
        message: dict = {"type": "ask", "task_id": self.task_id, "ask_id": ask_id, "question": question}
        if choices:
            message["choices"] = [str(choice) for choice in choices]
        try:
            if not self._emit(message):
                raise AskError("cannot ask: the connection to the broker failed")
            if not pending["event"].wait(timeout):
                raise AskError(f"no answer within {timeout} s")
            task.check_cancelled()
            if "error" in pending:
                raise AskError(pending["error"])
            return str(pending.get("answer", ""))
        finally:
            with self.lock:
                self.asks.pop(ask_id, None)

    def heartbeat_loop(self) -> None:
        while not self.stopping.wait(self.heartbeat_s):
            if self.final_sent.is_set():
                return
            self.send_payload("heartbeat")

    def _close(self) -> None:
        self.stopping.set()
        if self.conn is not None:
            self.conn.close()


def _log(text: str) -> None:
    sys.stderr.write(f"[backchannel] {text}\n")
    sys.stderr.flush()


def run_agent(work: Callable[[Task], Any], argv: Optional[list[str]] = None) -> None:
    """Runs ``work(task)`` as a Backchannel task and exits the process with a matching code.

    The return value (any JSON-serialisable value) becomes ``data`` of the ``success`` payload.
    Raise :class:`AgentError` (or any exception) to fail; :class:`Cancelled` to end as cancelled.
    """
    argv = sys.argv[1:] if argv is None else argv
    task_id = _read_task_id(argv)
    if not task_id:
        _log("no task id: expected --task-id=<id> or CURSOR_TASK_ID (run me with `backchannel run`)")
        sys.exit(EXIT_USAGE)

    # Take the hand-off variables out of our environment so processes we start do not report to
    # this task by accident (protocol §1).
    env = {name: os.environ.pop(name) for name in HANDOFF_VARIABLES if name in os.environ}
    try:
        attempt = int(env.get("CURSOR_TASK_ATTEMPT") or 1)
    except ValueError:
        attempt = 1

    runtime = _Runtime(task_id, env)
    task = Task(task_id, attempt, runtime)
    runtime.task = task
    runtime.connect()
    if runtime.welcome.get("attempt"):
        task.attempt = int(runtime.welcome["attempt"])
    if runtime.heartbeat_s > 0:
        threading.Thread(target=runtime.heartbeat_loop, name="backchannel-heartbeat", daemon=True).start()

    code = EXIT_OK
    try:
        result = work(task)
        if task.cancelled.is_set():
            raise Cancelled(task.cancel_reason or "cancelled")
        runtime.send_final("success", result, task._meta)
    except Cancelled as cancelled:
        code = EXIT_CANCELLED
        runtime.send_final("cancelled", {"reason": str(cancelled)}, task._meta)
    except KeyboardInterrupt:
        code = EXIT_CANCELLED
        runtime.send_final("cancelled", {"reason": "interrupted"}, task._meta)
    except AgentError as error:
        code = EXIT_ERROR
        runtime.send_final("error", dict(error.data, message=str(error)), task._meta,
                           **({} if error.retryable else {"retryable": False}))
    except Exception as error:  # every exception ends in an error payload, never silence
        code = EXIT_ERROR
        trace = traceback.format_exc()
        _log(trace)
        runtime.send_final("error", {"message": f"{type(error).__name__}: {error}",
                                     "traceback": trace[-2000:]}, task._meta)
    finally:
        runtime._close()
    sys.exit(code)
