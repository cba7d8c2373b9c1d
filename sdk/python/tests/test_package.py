"""The package as published: typed, versioned in one place, documented, standard library only."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SDK

PACKAGE = SDK / "src" / "backchannel_subagent"


def test_the_installed_package_is_typed_and_carries_the_changelog_version(sdk_site: Path) -> None:
    assert (sdk_site / "backchannel_subagent" / "py.typed").exists()
    metadata = next(sdk_site.glob("backchannel_subagent-*.dist-info")) / "METADATA"
    text = metadata.read_text(encoding="utf-8")
    version = re.search(r"^Version: (.+)$", text, re.M)
    assert version is not None
    assert f"## {version.group(1)} " in (SDK / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"^Name: backchannel-subagent$", text, re.M)
    assert "Requires-Dist" not in text, "no dependencies beyond the standard library"


def test_it_imports_nothing_outside_the_standard_library() -> None:
    if not hasattr(sys, "stdlib_module_names"):
        pytest.skip("sys.stdlib_module_names needs Python 3.10; the check runs on newer interpreters")
    stdlib = set(sys.stdlib_module_names)
    for source in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in stdlib | {"__future__"}, f"{source.name} imports {name}"


def test_every_public_name_has_a_docstring() -> None:
    import importlib

    sys.path.insert(0, str(PACKAGE.parent))
    try:
        sdk = importlib.import_module("backchannel_subagent")
    finally:
        sys.path.remove(str(PACKAGE.parent))
    undocumented = [name for name in sdk.__all__ if callable(getattr(sdk, name)) and not getattr(sdk, name).__doc__]
    undocumented += [f"Task.{n}" for n in dir(sdk.Task) if not n.startswith("_") and not getattr(sdk.Task, n).__doc__]
    assert undocumented == []


def test_mypy_strict_passes_on_the_package_and_on_an_agent_using_it(sdk_site: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (npm test installs it into .venv-test/)")
    typed_agent = Path(__file__).parent / "agents" / "typed.py"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "backchannel_subagent", "-m", "typed"],
        capture_output=True,
        text=True,
        cwd=typed_agent.parent,
        env={"MYPYPATH": os.pathsep.join([str(sdk_site), str(typed_agent.parent)]), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
