"""The spool file is written whole or not at all: a broker reading the directory meanwhile (a restarted
hub adopting spool files) never finds half of it, which it would remove as unreadable."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Set

from conftest import SDK

sys.path.insert(0, str(SDK / "src"))

from backchannel_subagent._wire import write_spool  # noqa: E402


def test_a_spool_file_is_never_seen_half_written(tmp_path: Path) -> None:
    line = json.dumps({"task_id": "t1", "status": "success", "data": {"text": "x" * (4 * 1024 * 1024)}}).encode()
    target = tmp_path / "t1.json"
    sizes: Set[int] = set()
    done = threading.Event()

    def watch() -> None:
        # Every size the file has while it is written again and again (none while it is not there).
        while not done.is_set():
            try:
                sizes.add(target.stat().st_size)
            except FileNotFoundError:
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(8):
            assert write_spool(str(tmp_path), "t1", line) == str(target)
    finally:
        done.set()
        watcher.join(timeout=30)
    assert sizes == {len(line) + 1}
    assert json.loads(target.read_text(encoding="utf-8"))["status"] == "success"
    # Nothing left beside it (no temporary file), and owner-only.
    assert [p.name for p in tmp_path.iterdir()] == ["t1.json"]
    assert target.stat().st_mode & 0o777 == 0o600
