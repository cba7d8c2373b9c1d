/**
 * The bridge over the hub's control endpoint (HTTP on a Unix domain socket): the same
 * `BackchannelBridge` the panel uses, built by `bridgeClient` from the one route table, so a CLI
 * command, the MCP server or the gateway in another process drives the running app's broker.
 *
 * When the hub goes away (killed, stopped), calls reject with `HubLostError` and every event
 * subscription ends: `onLost` listeners hear about it once, so a waiting front-end fails with a clear
 * message instead of hanging.
 */
import { request, type IncomingMessage } from 'node:http';
import type { BackchannelBridge, BridgeEvent, SubmitRequest, TaskFeedEvent } from '../bridge/contract.js';
import { bridgeClient, unwrapReply, type BridgeArgs, type BridgeMethod, type BridgeResult } from '../bridge/calls.js';
import { BridgeError, errorFromBody } from '../model/errors.js';
import { buildRequest, EVENTS_PATH, FOLLOW_PATH } from '../bridge/http-routes.js';
import { isFinished } from '../model/task.js';
import { LineDecoder } from '../protocol/framing.js';

/** A call that gets no reply within this long fails (the hub answers every call at once; waits happen over events). */
export const HUB_CALL_TIMEOUT_MS = 30_000;

/**
 * The calls that run git over a whole change before they answer (apply a 160 MB diff: over 30 s on a
 * busy machine) get this long instead.
 */
export const GIT_CALL_TIMEOUT_MS = 10 * 60_000;
const SLOW_CALLS: Partial<Record<BridgeMethod, number>> = {
  applyChanges: GIT_CALL_TIMEOUT_MS,
  keepBranch: GIT_CALL_TIMEOUT_MS,
  discardChange: GIT_CALL_TIMEOUT_MS,
};

/**
 * The hub cannot be reached, or went away: the one error with code `hub_lost` (../model/errors.ts), `data.path` the
 * control endpoint. Front-ends branch on the code (`isHubLost`), never on this class, which stays inside the client.
 */
export class HubLostError extends BridgeError {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super('hub_lost', `The Backchannel hub (control endpoint ${path}) is gone: ${detail}`, { path });
  }
}

/** Whether `error` says the hub cannot be reached or went away (code `hub_lost`), from any copy of the client. */
export function isHubLost(error: unknown): error is BridgeError {
  return BridgeError.is(error) && error.code === 'hub_lost';
}

export interface HubClient extends BackchannelBridge {
  readonly path: string;
  /**
   * Submits a task and calls `listener` with every change of it (not coalesced, see
   * `TaskFeedEvent`). `id` resolves once the hub accepted it (rejects with its refusal); `ended`
   * after the `exited` update, or rejects with `HubLostError` when the stream breaks first (or with
   * a plain Error after `close()`). The task is attached to this connection: `close()` before it
   * ended makes the hub cancel it.
   */
  submitAndFollow(request: SubmitRequest, listener: (event: TaskFeedEvent) => void): FollowedSubmission;
  /**
   * Calls `listener` with every change of the existing task `id`, as `submitAndFollow` does (not attached:
   * `close()` stops the watching only). A task that has already ended gives its picture, then `ended`.
   */
  watch(id: string, listener: (event: TaskFeedEvent) => void): FollowedSubmission;
  /** Calls `listener` once when an event stream breaks or a call cannot reach the hub; returns the unsubscribe. */
  onLost(listener: (error: HubLostError) => void): () => void;
  /** Ends every event subscription of this client. */
  close(): void;
}

export interface FollowedSubmission {
  readonly id: Promise<string>;
  readonly ended: Promise<void>;
  close(): void;
}

/** What the calls and streams of one hub client share: the endpoint, its open streams, who hears of a loss. */
interface Connection {
  readonly path: string;
  readonly streams: Set<IncomingMessage>;
  /** Tells the `onLost` listeners (once the client is not closed) and returns the error to throw. */
  lost(error: HubLostError): HubLostError;
}

export function connectHub(path: string): HubClient {
  const lostListeners = new Set<(error: HubLostError) => void>();
  let closed = false;
  const connection: Connection = {
    path,
    streams: new Set(),
    lost(error) {
      if (!closed) for (const listener of [...lostListeners]) listener(error);
      return error;
    },
  };
  const client = bridgeClient(
    (method, ...args) => callHub(connection, method, ...args),
    (listener) => subscribeToEvents(connection, listener),
  ) as HubClient;
  return Object.assign(client, {
    path,
    submitAndFollow: (submission: SubmitRequest, listener: (event: TaskFeedEvent) => void) =>
      openTaskStream(connection, 'POST', FOLLOW_PATH, JSON.stringify(submission), listener),
    watch: (id: string, listener: (event: TaskFeedEvent) => void) =>
      openTaskStream(connection, 'GET', `${FOLLOW_PATH}/${encodeURIComponent(id)}`, undefined, listener),
    onLost(listener: (error: HubLostError) => void) {
      lostListeners.add(listener);
      return () => lostListeners.delete(listener);
    },
    close() {
      closed = true;
      for (const stream of connection.streams) stream.destroy();
      connection.streams.clear();
      lostListeners.clear();
    },
  });
}

/** One request/reply call of the route table, as HTTP on the control socket. */
async function callHub<M extends BridgeMethod>({ path, lost }: Connection, method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> {
  const shape = buildRequest(method, args);
  const body = shape.body === undefined ? undefined : JSON.stringify(shape.body);
  const timeout = SLOW_CALLS[method] ?? HUB_CALL_TIMEOUT_MS;
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      {
        socketPath: path,
        method: shape.verb,
        path: shape.path,
        headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (error) => reject(lost(new HubLostError(path, error.message))));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no reply to ${method} within ${timeout} ms`)));
    req.on('error', (error) => reject(lost(new HubLostError(path, error.message))));
    req.end(body);
  });
  const value = text === '' ? null : (JSON.parse(text) as unknown);
  if (status !== 200) throw errorFromBody(value);
  return unwrapReply<BridgeResult<M>>({ ok: true, value });
}

/** The panel's all-task stream (server-sent events); the returned function unsubscribes. */
function subscribeToEvents({ path, streams, lost }: Connection, listener: (event: BridgeEvent) => void): () => void {
  let current: IncomingMessage | undefined;
  let unsubscribed = false;
  const req = request({ socketPath: path, method: 'GET', path: EVENTS_PATH }, (res) => {
    current = res;
    streams.add(res);
    // Server-sent events: an event's `data:` lines count once the blank line ending it has come.
    const data: string[] = [];
    readLines(res, (line) => {
      if (line.startsWith('data: ')) data.push(line.slice(6));
      else if (line === '') for (const text of data.splice(0)) listener(JSON.parse(text) as BridgeEvent);
    });
    res.on('close', () => {
      streams.delete(res);
      if (!unsubscribed) lost(new HubLostError(path, 'its event stream closed'));
    });
  });
  req.on('error', (error) => {
    if (!unsubscribed) lost(new HubLostError(path, error.message));
  });
  req.end();
  return () => {
    unsubscribed = true;
    req.destroy();
    current?.destroy();
  };
}

/** A task's own NDJSON stream (see ../hub/control/follow.ts): `POST` submits and follows, `GET` watches. */
function openTaskStream(
  { path, streams, lost }: Connection,
  method: 'GET' | 'POST',
  feedPath: string,
  body: string | undefined,
  listener: (event: TaskFeedEvent) => void,
): FollowedSubmission {
  let done = false;
  let last: TaskFeedEvent | undefined;
  let resolveId!: (id: string) => void;
  let rejectId!: (error: Error) => void;
  let resolveEnded!: () => void;
  let rejectEnded!: (error: Error) => void;
  const id = new Promise<string>((resolve, reject) => ((resolveId = resolve), (rejectId = reject)));
  const ended = new Promise<void>((resolve, reject) => ((resolveEnded = resolve), (rejectEnded = reject)));
  // Either may go unobserved (a caller that only awaits `ended`, or only `id`).
  id.catch(() => {});
  ended.catch(() => {});
  const fail = (error: Error): void => {
    if (done) return;
    done = true;
    rejectId(error); // no effect once the id is known
    rejectEnded(error);
  };
  const req = request({
    socketPath: path,
    method,
    path: feedPath,
    headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  req.on('error', (error) => fail(lost(new HubLostError(path, error.message))));
  req.on('response', (res) => {
    if (res.statusCode !== 200) return refused(res, fail);
    streams.add(res);
    readLines(res, (line) => {
      if (done) return;
      let event: TaskFeedEvent;
      try {
        event = JSON.parse(line) as TaskFeedEvent;
      } catch {
        req.destroy();
        return fail(lost(new HubLostError(path, 'it sent a malformed line on a task stream')));
      }
      resolveId(event.task.id);
      listener(event);
      if (event.update?.kind === 'exited') {
        done = true;
        resolveEnded();
      }
      last = event;
    });
    res.on('close', () => {
      streams.delete(res);
      // A watched task that had already ended: its picture was the whole stream.
      if (!done && method === 'GET' && last && !last.update && isFinished(last.task.state)) {
        done = true;
        return resolveEnded();
      }
      // After `exited` (or a failure already reported) the close is the stream's normal end.
      if (!done) fail(lost(new HubLostError(path, "the task's stream closed before it ended")));
    });
  });
  req.end(body);
  return {
    id,
    ended,
    close() {
      fail(new Error('stopped following the task'));
      req.destroy();
    },
  };
}

/** A refused submission: the hub's error body as the `BridgeError` a `submit` call would reject with. */
function refused(res: IncomingMessage, fail: (error: Error) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => {
    let body: unknown = null;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      // not JSON: errorFromBody says the reply was malformed
    }
    fail(errorFromBody(body));
  });
}

/**
 * Calls `onLine` with each line of a response body (UTF-8, without its `\n`). Framed on bytes, with
 * the pending line kept as a list of chunks (../protocol/framing.ts): a 10 MB result is one line of
 * 150 chunks, which `pending += chunk` and a search from 0 per chunk made quadratic (1.2 s of CPU).
 */
function readLines(res: IncomingMessage, onLine: (line: string) => void): void {
  // No limit of its own: the hub bounds what it sends (and how far a reader may lag behind).
  const decoder = new LineDecoder({ line: onLine, overflow: () => {} }, Number.POSITIVE_INFINITY);
  res.on('data', (chunk: Buffer) => decoder.push(chunk));
}
