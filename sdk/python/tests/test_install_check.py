"""The suite skips only when pip could not fetch the SDK's build backend, never on a real install failure.

A real failure is made by installing a copy of the SDK whose ``pyproject.toml`` is wrong, with the same
pip command as the fixture; its output, with or without the ``NewConnectionError`` pip prints for an
unreachable default index, must not read as "no package index reachable".
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SDK, _can_build_offline, _index_unreachable

#: What pip prints when its default index cannot be reached, on every run (urllib3's retry warning).
UNREACHABLE_DEFAULT_INDEX = (
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by "
    "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f2b>: Failed to establish a new "
    "connection: [Errno 101] Network is unreachable')': /simple/setuptools/\n"
)


def test_a_real_install_failure_is_not_taken_for_a_missing_index(tmp_path: Path) -> None:
    source = tmp_path / "python"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    pyproject = source / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("[project]\n", "[project]\nthis-is-not-a-field = 1\n", 1))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(tmp_path / "site"), str(source)]
    if _can_build_offline():
        command.insert(4, "--no-build-isolation")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    if _index_unreachable(output):
        pytest.skip("no package index reachable here to fetch the build backend: the real failure cannot be reached")
    assert done.returncode != 0, output
    assert "this-is-not-a-field" in output
    assert not _index_unreachable(output)
    assert not _index_unreachable(UNREACHABLE_DEFAULT_INDEX + output)


def test_a_build_backend_no_index_could_give_is_a_skip() -> None:
    offline = (
        UNREACHABLE_DEFAULT_INDEX
        + "ERROR: Could not find a version that satisfies the requirement setuptools>=61 (from versions: none)\n"
        + "ERROR: No matching distribution found for setuptools>=61\n"
    )
    assert _index_unreachable(offline)
    assert not _index_unreachable(offline.replace("setuptools", "backchannel-subagent"))
    assert not _index_unreachable(UNREACHABLE_DEFAULT_INDEX)
