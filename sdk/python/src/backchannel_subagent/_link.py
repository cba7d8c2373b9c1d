"""The agent's end of the task's socket: connect with bounded retry, write lines, read broker messages on a thread."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Callable, Sequence

from ._wire import Message, encode

#: The broker listens before it spawns the agent, so the first attempt nearly always works; retries
#: cover a slow filesystem. 8 attempts, 25 ms doubling to 500 ms: about 2.3 s in all, as the TypeScript SDK.
CONNECT_ATTEMPTS = 9
CONNECT_FIRST_DELAY_S = 0.025
CONNECT_MAX_DELAY_S = 0.5
#: Reads big enough that a 10 MB input arrives in about 40 system calls.
READ_CHUNK = 1 << 18
#: A broker line longer than this is dropped with the connection (the broker's own limit is 64 MiB).
MAX_LINE_BYTES = 256 * 1024 * 1024


def connect_with_retry(path: str) -> socket.socket:
    """Connects to the Unix socket ``path``, retrying while it is missing or refusing; raises OSError at the end."""
    if not hasattr(socket, "AF_UNIX"):
        raise OSError("this Python has no AF_UNIX sockets (Windows named pipes are not supported)")
    delay = CONNECT_FIRST_DELAY_S
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError, BlockingIOError):
            sock.close()
            if attempt == CONNECT_ATTEMPTS:
                raise
            time.sleep(delay)
            delay = min(delay * 2, CONNECT_MAX_DELAY_S)
        except OSError:
            sock.close()
            raise
    raise AssertionError("unreachable")


class Link:
    """One authenticated NDJSON connection: ``send`` from any thread, messages delivered to ``on_message``.

    ``on_close`` runs once, on the reader thread, when the broker closes the connection or it fails.
    """

    def __init__(self, sock: socket.socket, on_message: Callable[[Message], None], on_close: Callable[[], None]) -> None:
        self._sock = sock
        self._on_message = on_message
        self._on_close = on_close
        self._write_lock = threading.Lock()
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="backchannel-reader", daemon=True)

    def start(self) -> None:
        """Starts reading broker messages."""
        self._reader.start()

    @property
    def closed(self) -> bool:
        """True once the connection is gone (closed by either side, or failed)."""
        return self._closed.is_set()

    def send(self, message: Message) -> bool:
        """Writes one message line; False when the connection is (or just went) down."""
        return self.send_encoded(encode(message))

    def send_encoded(self, line: bytes, after: Sequence[bytes] = ()) -> bool:
        """Writes an already encoded message (without its newline), then ``after`` (an attachment's raw
        bytes) with nothing between; False when the connection is down."""
        if self.closed:
            return False
        try:
            with self._write_lock:
                self._sock.sendall(line + b"\n")
                for body in after:
                    self._sock.sendall(body)
            return True
        except OSError:
            self._mark_closed()
            return False

    def close(self) -> None:
        """Half-closes, waits briefly for the broker to close its end, then releases the socket."""
        if not self.closed:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._closed.wait(0.5)
        self._mark_closed()
        self._sock.close()

    def _read_loop(self) -> None:
        buffer = bytearray()
        scanned = 0  # bytes of buffer known to hold no newline: a 10 MB line is scanned once, not per chunk
        while not self.closed:
            try:
                chunk = self._sock.recv(READ_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            buffer += chunk
            while True:
                newline = buffer.find(b"\n", scanned)
                if newline < 0:
                    scanned = len(buffer)
                    break
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                scanned = 0
                self._dispatch(line)
            if len(buffer) > MAX_LINE_BYTES:
                break
        self._mark_closed()

    def _dispatch(self, line: bytes) -> None:
        # The whole line is decoded at once, so a character split across reads stays whole.
        try:
            message = json.loads(line.rstrip(b"\r").decode("utf-8", errors="replace"))
        except ValueError:
            return
        if isinstance(message, dict) and isinstance(message.get("type"), str):
            self._on_message(message)

    def _mark_closed(self) -> None:
        with self._write_lock:
            if self._closed.is_set():
                return
            self._closed.set()
        self._on_close()
