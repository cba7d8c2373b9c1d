"""Wire protocol v1 (docs/protocol.md in the Backchannel repository): names, framing, and the two fallbacks."""

from __future__ import annotations

import json
import os
import re
import select
import sys
from datetime import datetime, timezone
from typing import Any, Dict, TextIO, Tuple

ENV_TASK_ID = "CURSOR_TASK_ID"
ENV_IPC_PATH = "CURSOR_IPC_PATH"
ENV_IPC_TOKEN = "CURSOR_IPC_TOKEN"
ENV_TASK_ATTEMPT = "CURSOR_TASK_ATTEMPT"
ENV_HEARTBEAT_MS = "CURSOR_HEARTBEAT_MS"
ENV_SPOOL_DIR = "CURSOR_SPOOL_DIR"
ARG_TASK_ID = "--task-id="
#: Every variable of the hand-off: removed from ``os.environ`` once read (protocol §1).
HAND_OFF_VARIABLES: Tuple[str, ...] = (ENV_TASK_ID, ENV_IPC_PATH, ENV_IPC_TOKEN, ENV_TASK_ATTEMPT, ENV_HEARTBEAT_MS, ENV_SPOOL_DIR)
#: The SSE-style prefix of a payload printed on stdout (protocol §7).
STDOUT_PREFIX = b"data: "
FINAL_STATUSES = ("success", "error", "cancelled")

Message = Dict[str, Any]


def iso_now() -> str:
    """UTC now in ISO 8601 with milliseconds, the broker's own shape: ``2026-11-30T08:00:00.000Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def encode(message: Message) -> bytes:
    """One JSON object as UTF-8 bytes, without the newline. Raises TypeError/ValueError for non-JSON values.

    UTF-8 rather than ``\\uXXXX`` escapes keeps non-ASCII data at its own size (a 10 MB string of
    ``é`` would triple); text holding lone surrogates cannot be UTF-8, so it falls back to escapes.
    """
    try:
        return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def print_to_stdout(line: bytes) -> None:
    """Writes an encoded payload as a ``data:`` line plus the blank line, flushed (protocol §7).

    Bytes go to ``sys.stdout.buffer`` so a non-UTF-8 locale cannot garble or refuse them; what the
    agent printed before is flushed first so the order of the task's log is kept. A stdout that is
    gone (the broker died and closed the pipe) is not an error of the agent's.
    """
    stdout = sys.stdout
    try:
        stdout.flush()
        raw = getattr(stdout, "buffer", None)
        if raw is None:  # replaced by a text-only stream (a test harness, a notebook)
            stdout.write((STDOUT_PREFIX + line + b"\n\n").decode("utf-8"))
            stdout.flush()
        else:
            raw.write(STDOUT_PREFIX + line + b"\n\n")
            raw.flush()
    except (OSError, ValueError) as error:
        # stdout is gone with the broker (a broken pipe, a closed file): the spool is the way left
        output_failed(stdout, error)


def write_spool(spool_dir: str, task_id: str, line: bytes) -> str:
    """Writes the final payload to ``<spool_dir>/<task_id>.json`` with mode 0600; returns the path (protocol §8)."""
    # A bare name, as the broker reads it: a task id can never reach outside the spool directory.
    name = re.sub(r"^.*[\\/]", "", task_id) + ".json"
    path = os.path.join(spool_dir, name)
    # Whole or not at all: written under a name the broker ignores, then renamed into place. A
    # restarting broker reads the directory meanwhile; a half-written file read then was lost.
    temp = os.path.join(spool_dir, f".{name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(line + b"\n")
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return path


def warn(text: str) -> None:
    """A runtime line in the task's log (stderr, which the broker keeps)."""
    write_stderr(f"[backchannel] {text}\n")


def write_stderr(text: str) -> None:
    """Writes and flushes ``text`` on stderr; a stderr that went with the broker is not the agent's error."""
    stderr = sys.stderr
    try:
        stderr.write(text)
        stderr.flush()
    except (OSError, ValueError) as error:
        output_failed(stderr, error)


def output_failed(stream: TextIO, error: Exception) -> None:
    """After a failed write to ``stream``: when its reader is gone, stdout and stderr are let go (see drop_broken_output)."""
    if isinstance(error, BrokenPipeError):
        _to_devnull(stream)
    drop_broken_output()


def drop_broken_output() -> None:
    """Points stdout and stderr whose reader has gone (the broker died) at ``/dev/null``.

    Both are pipes the broker reads. Once it is gone every write to them raises BrokenPipeError: in
    the SDK's own writes, in the agent's ``print()``, and in the interpreter's last flush of stdout at
    exit, which then turns a finished agent's exit code into 120. A lost pipe only costs that
    channel (the result goes to the spool), so from then on what is written there goes nowhere.
    """
    for stream in (sys.stdout, sys.stderr):
        if _reader_gone(stream):
            _to_devnull(stream)


def _fileno(stream: Any) -> int:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return -1  # replaced by an object without a descriptor (a test harness), or closed


def _reader_gone(stream: Any) -> bool:
    """True when ``stream`` is a pipe or socket whose other end is closed (poll reports an error or hang-up)."""
    fd = _fileno(stream)
    if fd < 0 or not hasattr(select, "poll"):
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _to_devnull(stream: Any) -> None:
    fd = _fileno(stream)
    if fd < 0:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    except OSError:
        pass
