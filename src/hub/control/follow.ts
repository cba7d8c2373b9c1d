/**
 * A task's own stream on the control endpoint, as NDJSON `TaskFeedEvent` lines (not coalesced, in
 * order), ending after its `exited` update. For front-ends in other processes that follow a task
 * through the seam (src/client/tasks.ts): `run`, `wait`, `logs -f`, MCP, the gateway.
 *
 * - `POST /api/follow` submits a task and streams it. The submission is attached to its connection:
 *   when the front-end goes away (closed, crashed, killed) before the task ended, the hub cancels
 *   the task — nobody is left to hear its answer.
 * - `GET /api/follow/<id>` streams an existing task (not attached: closing it stops the watching
 *   only); a task that has already ended gets its picture, then the stream ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TaskFeedEvent } from '../../bridge/contract.js';
import { checkSubmitRequest } from '../../bridge/checks.js';
import { httpStatusOf, toErrorBody } from '../../model/errors.js';
import { isFinished } from '../../model/task.js';
import { payloadJson } from '../../model/payload-json.js';
import type { BrokerBridge } from '../broker-bridge.js';
import { readJsonBody, REFUSED } from '../http/api.js';
import { sendJson } from '../http/responses.js';
import { MAX_SUBMIT_BYTES } from '../../model/limits.js';

/** A front-end this far behind on its task's stream is cut off (it sees the stream break). */
const MAX_FOLLOW_BACKLOG_BYTES = 8 * 1024 * 1024;

const FRONT_END_GONE = 'the front-end that started it went away';

/**
 * Writes feed events as NDJSON on `res` until `exited` (or, watching, the picture of a task that had
 * already ended); `stop` is called once it ended.
 */
function feedWriter(res: ServerResponse, stop: () => void): { write(event: TaskFeedEvent): void } {
  let ended = false;
  let largest = 0;
  const end = (): void => {
    ended = true;
    stop();
    res.end();
  };
  return {
    write(event) {
      if (ended) return;
      // A big result or partial is one line the reader takes in its stride: the backlog allowed grows with it.
      if (res.writableLength > MAX_FOLLOW_BACKLOG_BYTES + largest) return void res.destroy();
      if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-store' });
      const line = feedLine(event);
      largest = Math.max(largest, line.length);
      res.write(line);
      if (event.update?.kind === 'exited' || (!event.update && isFinished(event.task.state))) end();
    },
  };
}

/**
 * One event as its NDJSON line: `JSON.stringify(event)`, except that a result is spliced in as the
 * text `payloadJson` made for it (or makes now, for the result file to reuse): the same JSON, with
 * `result` as the task's last field.
 */
export function feedLine(event: TaskFeedEvent): string {
  const { result, ...task } = event.task;
  if (!result) return JSON.stringify(event) + '\n';
  const head = JSON.stringify(task);
  const taskJson = `${head.slice(0, -1)}${head === '{}' ? '' : ','}"result":${payloadJson(result)}}`;
  const update = event.update === undefined ? '' : `,"update":${JSON.stringify(event.update)}`;
  return `{"task":${taskJson}${update}}\n`;
}

export async function handleWatch(bridge: BrokerBridge, id: string, res: ServerResponse): Promise<void> {
  let watching: { stop(): void } | undefined;
  let stopped = false;
  const stop = (): void => {
    stopped = true;
    watching?.stop();
  };
  const feed = feedWriter(res, stop);
  try {
    watching = bridge.watch(id, (event) => feed.write(event));
  } catch (error) {
    const refusal = toErrorBody(error);
    return sendJson(res, httpStatusOf(refusal.error.code), refusal);
  }
  if (stopped) watching.stop();
  res.on('close', stop);
}

export async function handleFollow(bridge: BrokerBridge, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonBody(req, res, MAX_SUBMIT_BYTES);
  if (body === REFUSED) return;
  let following: { id: string; stop(): void } | undefined;
  let ended = false;
  const feed = feedWriter(res, () => {
    ended = true;
    following?.stop();
  });
  try {
    following = bridge.submitAndFollow(checkSubmitRequest(body), (event) => feed.write(event));
  } catch (error) {
    // Refused as a `submit` call is: a bad request, a closed broker.
    const refusal = toErrorBody(error);
    return sendJson(res, httpStatusOf(refusal.error.code), refusal);
  }
  const { id } = following;
  if (ended) following.stop();
  res.on('close', () => {
    if (ended) return;
    ended = true;
    following?.stop();
    bridge
      .getTask(id)
      .then(({ task }) => (isFinished(task.state) ? undefined : bridge.cancel(id, FRONT_END_GONE)))
      .catch(() => {}); // already gone from history, or the broker is closing
  });
}
