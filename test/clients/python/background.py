"""Responses background mode through the official Python `openai` SDK (src/gateway/background/).

Usage: python background.py BASE_URL KEY PID_DIR RELEASE_FILE

1. `responses.create(background=True)` on the `echo` stand-in, then `responses.retrieve` until it
   is completed.
2. `responses.cancel` of the `slow` stand-in once it runs (its pids are in PID_DIR).
3. A streamed background response on `slow`, cut after its first text delta, RELEASE_FILE written,
   then resumed with `responses.retrieve(id, stream=True, starting_after=N)`.

Every loop is bounded. Prints one JSON object: what each step saw.
"""

import json
import os
import sys
import time

import openai

base_url, key, pid_dir, release_file = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
DEADLINE_S = 60


def until(condition, what):
    """Calls `condition` until it returns something truthy (every 50 ms, at most DEADLINE_S)."""
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


report = {}

created = client.responses.create(model="echo", input="from python", background=True)
report["created_status"] = created.status
done = until(
    lambda: (lambda r: r if r.status == "completed" else None)(client.responses.retrieve(created.id)),
    "the response to complete",
)
report["completed"] = {"status": done.status, "text": done.output_text, "background": done.background}

slow = client.responses.create(model="slow", input="sleep", background=True)
until(lambda: any(name.endswith(".json") for name in os.listdir(pid_dir)), "the slow agent to start")
cancelled = client.responses.cancel(slow.id)
report["cancelled"] = {"status": cancelled.status, "pids": sorted(n for n in os.listdir(pid_dir) if n.endswith(".json"))}

first = []
with client.responses.create(model="slow", input="stream me", background=True, stream=True) as stream:
    for event in stream:
        first.append(event)
        if event.type == "response.output_text.delta":
            break  # the connection is cut here
response_id = first[0].response.id
with open(release_file, "w"):
    pass
rest = list(client.responses.retrieve(response_id, stream=True, starting_after=first[-1].sequence_number))
events = first + rest
report["resumed"] = {
    "sequence": [e.sequence_number for e in events],
    "types": [events[0].type, events[-1].type],
    "text": "".join(e.delta for e in events if e.type == "response.output_text.delta"),
}
print(json.dumps(report))
