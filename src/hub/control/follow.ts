/**
 * `POST /api/follow` on the control endpoint: submit a task and stream every change of it as NDJSON
 * `TaskFeedEvent` lines (not coalesced), ending after its `exited` update. For front-ends in other
 * processes that relay a task's output as it comes: the gateway's streamed answers.
 *
 * The submission is attached to its connection: when the front-end goes away (closed, crashed)
 * before the task ended, the hub cancels the task — nobody is left to hear its answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TaskFeedEvent } from '../../bridge/contract.js';
import { checkSubmitRequest } from '../../bridge/checks.js';
import { HTTP_STATUS, toErrorBody } from '../../bridge/errors.js';
import { isFinished } from '../../model/task.js';
import type { BrokerBridge } from '../broker-bridge.js';
import { readJsonBody, REFUSED } from '../http/api.js';
import { sendJson } from '../http/responses.js';

/** A front-end this far behind on its task's stream is cut off (it sees the stream break). */
const MAX_FOLLOW_BACKLOG_BYTES = 8 * 1024 * 1024;

const FRONT_END_GONE = 'the front-end that started it went away';

export async function handleFollow(bridge: BrokerBridge, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonBody(req, res);
  if (body === REFUSED) return;
  let ended = false;
  let following: { id: string; stop(): void } | undefined;
  const write = (event: TaskFeedEvent): void => {
    if (ended) return;
    if (res.writableLength > MAX_FOLLOW_BACKLOG_BYTES) return void res.destroy();
    if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-store' });
    res.write(JSON.stringify(event) + '\n');
    if (event.update?.kind === 'exited') {
      ended = true;
      following?.stop();
      res.end();
    }
  };
  try {
    following = bridge.follow(checkSubmitRequest(body), write);
  } catch (error) {
    // Refused as a `submit` call is: a bad request, a closed broker.
    const refusal = toErrorBody(error);
    return sendJson(res, HTTP_STATUS[refusal.error.code], refusal);
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
