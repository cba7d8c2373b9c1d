"""Attaches a text and a binary value to its result (docs/protocol.md §4.1): 400 KB of text, 10 MB of bytes.

The size is fixed, not read from the input: on the stdout fallback there is no input."""
from backchannel_subagent import run_agent


def handler(task):
    size = 40_000
    task.attach("report.md", "é✓中\n" * size)
    task.attach("bytes.bin", bytes(range(256)) * size)
    task.attach("report.md", "# Report\n" + "é✓中\n" * size)  # a name attached again is replaced
    return {"summary": "two attachments"}


run_agent(handler)
