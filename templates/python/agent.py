#!/usr/bin/env python3
"""Example sub-agent: counts lines, words and bytes of the text files under the task's directory.

Input (all optional):
    {"path": "src", "extensions": [".py", ".md"], "max_files": 5000, "pace_ms": 0, "ask": false}

- ``path``: a directory inside the working directory (paths escaping it are refused).
- ``extensions``: only count files ending with one of these (default: every text file).
- ``ask``: when true and no ``extensions`` are given, ask the person which kind of files to count.
- ``pace_ms``: pause between files (handy to watch progress or try cancelling).

Result: ``{"files": n, "lines": n, "words": n, "bytes": n, "largest": [{"path", "lines"}…], "skipped": n}``.
Replace ``count_files`` with your own work; keep the shape: read ``task.input``, report
``task.progress``, call ``task.check_cancelled()`` between steps, return the result.

The SDK is the ``backchannel-subagent`` package: ``backchannel new`` copies it next to this file
(``backchannel_subagent/``), or ``pip install`` it. Without either, the import falls back to the SDK
of the Backchannel this project depends on (``node_modules/backchannel-agents/sdk/python/src``), or, when
run inside the Backchannel repository itself, to ``sdk/python/src`` there.
"""

import os
import sys

try:
    from backchannel_subagent import AgentError, run_agent
except ModuleNotFoundError:  # neither vendored nor installed: the SDK of the Backchannel beside this agent
    HERE = os.path.dirname(os.path.abspath(__file__))
    for backchannel in (os.path.join(HERE, "node_modules", "backchannel"), os.path.join(HERE, "..", "..")):
        sys.path.append(os.path.join(backchannel, "sdk", "python", "src"))
    from backchannel_subagent import AgentError, run_agent

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "dist"}
ASK_CHOICES = {"Python": [".py"], "Markdown": [".md"], "JavaScript/TypeScript": [".js", ".mjs", ".ts"], "Everything": []}


def resolve_inside(root: str, relative: str) -> str:
    """``relative`` under ``root``, refusing anything that escapes it (``..``, absolute paths, symlinks)."""
    root_real = os.path.realpath(root)
    target = os.path.realpath(os.path.join(root_real, relative))
    if os.path.commonpath([root_real, target]) != root_real:
        raise AgentError(f"path {relative!r} is outside the working directory", retryable=False)
    return target


def list_files(top: str, extensions: list[str], limit: int) -> list[str]:
    found = []
    for directory, subdirs, files in os.walk(top):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if extensions and not any(name.endswith(ext) for ext in extensions):
                continue
            found.append(os.path.join(directory, name))
            if len(found) >= limit:
                return found
    return found


def count_files(task):
    options = task.input if isinstance(task.input, dict) else {}
    cwd = os.getcwd()
    top = resolve_inside(cwd, str(options.get("path", ".")))
    if not os.path.isdir(top):
        raise AgentError(f"{options.get('path')!r} is not a directory", retryable=False)

    extensions = [str(ext) for ext in options.get("extensions") or []]
    if not extensions and options.get("ask"):
        choice = task.ask("Which files should I count?", choices=list(ASK_CHOICES))
        extensions = ASK_CHOICES.get(choice, [])

    files = list_files(top, extensions, int(options.get("max_files", 5000)))
    pace = max(0, int(options.get("pace_ms", 0))) / 1000
    task.progress(0, step="listing", files=len(files))

    totals = {"files": 0, "lines": 0, "words": 0, "bytes": 0, "skipped": 0}
    per_file = []
    for index, path in enumerate(files, start=1):
        task.check_cancelled()  # stop between steps when the broker cancels us
        relative = os.path.relpath(path, cwd)
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            totals["skipped"] += 1  # binary or unreadable
            continue
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        totals["files"] += 1
        totals["lines"] += lines
        totals["words"] += len(text.split())
        totals["bytes"] += len(raw)
        per_file.append({"path": relative, "lines": lines})
        task.progress(round(100 * index / len(files), 1), step="counting", file=relative)
        if pace:
            task.sleep(pace)

    per_file.sort(key=lambda item: (-item["lines"], item["path"]))
    task.meta(files_scanned=len(files))
    result = dict(totals, extensions=extensions, largest=per_file[:5])
    # ``backchannel check`` (docs/protocol.md §10) asks for a long silence and an echo of its input.
    check = options.get("conformance") or {}
    if check.get("busy_ms"):
        task.sleep(float(check["busy_ms"]) / 1000)  # silent but for heartbeats; a cancel ends it
    if "echo" in check:
        result["echo"] = check["echo"]
    return result


if __name__ == "__main__":
    run_agent(count_files)
