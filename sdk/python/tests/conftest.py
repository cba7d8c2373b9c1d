"""Fixtures: the SDK installed from sdk/python with pip, and a real Backchannel broker driven over stdio.

The broker is the repository's built one (``dist/``, from ``npm run build``), run by
``broker_harness.mjs``; agents are the tiny programs in ``agents/``, run by the interpreter running
pytest with the freshly installed package on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
SDK = HERE.parent
REPO = SDK.parent.parent
AGENTS = HERE / "agents"
NODE = shutil.which("node") or "node"
#: Generous: two cores shared with other test runners, and Python takes a while to start under load.
EVENT_TIMEOUT_S = 60.0

Event = Dict[str, Any]


@pytest.fixture(scope="session")
def sdk_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install ./sdk/python`` into a private directory: the tests run the package as users get it."""
    if not (REPO / "dist" / "broker" / "index.js").exists():
        pytest.fail("dist/ is missing: run `npm run build` first (npm test does)")
    target = tmp_path_factory.mktemp("site")
    # From a copy: setuptools leaves build/ and *.egg-info in the tree it builds.
    source = tmp_path_factory.mktemp("source") / "python"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)]
    if _can_build_offline():
        command.insert(4, "--no-build-isolation")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and _index_unreachable(done.stdout + done.stderr):
        # One line for every test, not pip's traceback twenty times: they did not run, and say why.
        pytest.skip(
            "the SDK could not be installed: no package index reachable, and this Python cannot build it offline "
            "(that needs setuptools >= 70.1, or setuptools with the wheel package: `pip install wheel` once)"
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return target


#: What pip fetches from an index to build the SDK (its build backend); nothing else may be missing for a skip.
BUILD_BACKEND = ("setuptools", "wheel")
_MISSING = re.compile(r"(?:No matching distribution found for|Could not find a version that satisfies the requirement) ([A-Za-z0-9_.-]+)")


def _index_unreachable(output: str) -> bool:
    """Whether pip failed only for want of the build backend from a package index, not for the SDK itself.

    A ``NewConnectionError`` alone says nothing: pip prints one for an unreachable default index on every
    run, also when another index served what it needed and the install failed for a real reason.
    """
    missing = [name.lower() for name in _MISSING.findall(output)]
    return bool(missing) and all(name in BUILD_BACKEND for name in missing)


def _can_build_offline() -> bool:
    """setuptools ≥ 70.1 builds wheels by itself; older ones need the wheel package beside them."""
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    if (major, minor) >= (70, 1):
        return True
    try:
        import wheel  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture()
def agent_env(sdk_site: Path) -> Dict[str, str]:
    """The environment agents are started with: the installed SDK importable, a UTF-8 locale."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(sdk_site)
    env.pop("PYTHONHOME", None)
    return env


def agent(name: str) -> List[str]:
    """The command line of ``agents/<name>.py``."""
    return [sys.executable, str(AGENTS / f"{name}.py")]


class Broker:
    """One broker process (``broker_harness.mjs``); its events are collected on a thread."""

    def __init__(self, options: Dict[str, Any]) -> None:
        self.process = subprocess.Popen(
            [NODE, str(HERE / "broker_harness.mjs"), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        self.events: List[Event] = []
        self._arrived: "queue.Queue[None]" = queue.Queue()
        self._lock = threading.Lock()
        self._counter = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for(lambda e: e["ev"] == "ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            with self._lock:
                self.events.append(json.loads(raw))
            self._arrived.put(None)
        self._arrived.put(None)

    def send(self, command: Dict[str, Any]) -> None:
        """Writes one command line to the harness."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float = EVENT_TIMEOUT_S) -> Event:
        """The first event (already seen or still to come) matching ``predicate``; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            with self._lock:
                batch = self.events[seen:]
                seen = len(self.events)
            for event in batch:
                if predicate(event):
                    return event
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.process.poll() is not None and self._arrived.empty() and len(self.events) == seen):
                raise AssertionError(f"no matching broker event within {timeout} s; last events: {self.events[-5:]}")
            try:
                self._arrived.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                pass

    def submit(self, command: List[str], **spec: Any) -> str:
        """Submits a task; returns its id."""
        self._counter += 1
        ref = f"r{self._counter}"
        self.send({"op": "submit", "ref": ref, "spec": {"command": command[0], "args": command[1:], **spec}})
        return str(self.wait_for(lambda e: e["ev"] == "submitted" and e["ref"] == ref)["id"])

    def updates(self, task_id: str, kind: Optional[str] = None) -> List[Event]:
        """Every update of one task seen so far (of one ``kind``, if given)."""
        with self._lock:
            return [e for e in self.events if e["ev"] == "update" and e["taskId"] == task_id and (kind is None or e["kind"] == kind)]

    def finished(self, task_id: str, timeout: float = EVENT_TIMEOUT_S) -> Dict[str, Any]:
        """Waits until the task's processes are gone; returns its final snapshot, with its ``log`` lines."""
        event = self.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "exited", timeout)
        return {**event["snapshot"], "log": event["log"]}

    def snapshot(self, task_id: str) -> Dict[str, Any]:
        """The task's snapshot as the broker has it now."""
        self.send({"op": "get", "id": task_id})
        return dict(self.wait_for(lambda e: e["ev"] == "snapshot" and e["id"] == task_id and e["snapshot"] is not None)["snapshot"])

    def kill(self) -> None:
        """SIGKILL: the broker vanishes without closing anything, as in a crash."""
        self.process.kill()
        self.process.wait(timeout=10)

    def close(self) -> None:
        """Closes stdin (the harness then closes the broker, ending its tasks) and waits for the exit."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture()
def broker_dirs() -> Iterator[Dict[str, str]]:
    """Private ipc and data directories, removed afterwards."""
    root = tempfile.mkdtemp(prefix="bc-py-")
    try:
        yield {"ipcDir": os.path.join(root, "ipc"), "dataDir": os.path.join(root, "data")}
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def start_broker(broker_dirs: Dict[str, str]) -> Iterator[Callable[..., Broker]]:
    """Starts brokers (``start_broker(askTimeoutMs=…)``) on the test's directories; closes them afterwards."""
    started: List[Broker] = []

    def start(**options: Any) -> Broker:
        broker = Broker({**broker_dirs, **options})
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.close()


@pytest.fixture()
def broker(start_broker: Callable[..., Broker]) -> Broker:
    """A broker with a short ask timeout (2 s) and the default cancel grace (3 s)."""
    return start_broker(askTimeoutMs=2000)


def pid_alive(pid: int) -> bool:
    """True while a process with this id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Polls ``condition`` every 20 ms until it holds; fails with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def kill_if_alive(pid: int) -> None:
    """Ends a leftover agent process group of ours (a failed test must not leave one behind)."""
    if pid_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            os.kill(pid, signal.SIGKILL)
