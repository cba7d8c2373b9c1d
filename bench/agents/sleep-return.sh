#!/bin/sh
# The fleet module's I/O-bound agent: notes when it started (ms since the epoch), sleeps 200 ms, and
# returns one success payload on stdout (the fallback channel) with its task id and start time.
started=$(date +%s%3N)
sleep 0.2
id=${1#--task-id=}
printf 'data: {"task_id":"%s","status":"success","data":{"started_ms":%s}}\n\n' "$id" "$started"
