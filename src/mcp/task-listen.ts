/**
 * Task status notifications of the MCP Tasks extension (SEP-2663) through `subscriptions/listen` (MCP 2026-07-28):
 * a listen request whose filter names `notifications.taskIds` is served here, by both transports (./stdio-eras.ts,
 * ./http.ts), because the SDK v2's listen router knows only the four core filter fields and drops `taskIds`
 * (typescript-sdk#2528). What the specification (ext-tasks `specification/draft/tasks.md`, "Task Status
 * Notifications") asks, and what this does:
 *
 * - A client that did not declare `io.modelcontextprotocol/tasks` in the request's client capabilities gets -32021
 *   with `requiredCapabilities`; a malformed filter, -32602; a request without the 2026-07-28 envelope, -32602.
 * - The acknowledgement (`notifications/subscriptions/acknowledged`, first on the stream) names the task ids the
 *   server agreed to: those of existing tasks (exact ids, as the extension hands them out). This server declares no
 *   `listChanged` nor resource subscriptions, so no core field is ever honored beside them (the SDK's rule).
 * - Each `notifications/tasks` carries the complete `DetailedTask`, identical to `tasks/get` at that moment
 *   (./task-extension.ts): one at once with the task's current status, then one per change of status (and per new
 *   question while `input_required`), in order. Every message is stamped with the subscription id
 *   (`_meta["io.modelcontextprotocol/subscriptionId"]`, the listen request's id). No progress or log notification
 *   is ever sent on it.
 * - Once every honored task has ended (completed or cancelled), the server closes the subscription gracefully: the
 *   listen request's empty result (`resultType: "complete"`, with the subscription id and the server's identity).
 *   The client's `notifications/cancelled` for the listen id (or, over HTTP, its stream going away) ends it at once,
 *   and the task handles it held are stopped: nothing is left following.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { BridgeError, type BackchannelClient, type TaskRun } from '../client/index.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { detailedTask, modernStatus, TASKS_EXTENSION } from './task-extension.js';

export const LISTEN_METHOD = 'subscriptions/listen';
export const TASK_NOTIFICATION = 'notifications/tasks';
const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const MODERN_REVISION = '2026-07-28';
/** The most tasks one subscription follows: each holds a handle (on the hub, a stream) while it runs. */
export const MAX_LISTEN_TASKS = 256;

type RequestId = string | number;
type Wire = Record<string, unknown>;

/** The JSON-RPC messages a subscription sends: notifications, then (gracefully) the listen request's result. */
export type ListenMessage =
  | { jsonrpc: '2.0'; method: string; params: Wire }
  | { jsonrpc: '2.0'; id: RequestId; result: Wire }
  | { jsonrpc: '2.0'; id: RequestId; error: { code: number; message: string; data?: unknown } };

/** Where a subscription writes, and how the transport ends it. */
export interface ListenSink {
  send(message: ListenMessage): void;
  /** The subscription is over (after its graceful result, or because it was cancelled): release the transport. */
  end(): void;
}

/** An open subscription: `cancel()` stops it without a result (the client cancelled it), `close()` with one. */
export interface TaskSubscription {
  readonly id: RequestId;
  cancel(): void;
  close(): void;
}

const FILTER = z.looseObject({
  taskIds: z.array(z.string()).max(MAX_LISTEN_TASKS).optional(),
  toolsListChanged: z.boolean().optional(),
  promptsListChanged: z.boolean().optional(),
  resourcesListChanged: z.boolean().optional(),
  resourceSubscriptions: z.array(z.string()).optional(),
});
const LISTEN_PARAMS = z.looseObject({ notifications: FILTER, _meta: z.looseObject({}).optional() });

/** True for a `subscriptions/listen` request that asks for task notifications (the ones served here). */
export function listensForTasks(message: unknown): message is { jsonrpc: '2.0'; id: RequestId; method: string; params: Wire } {
  if (typeof message !== 'object' || message === null) return false;
  const { method, id, params } = message as Wire;
  if (method !== LISTEN_METHOD || (typeof id !== 'string' && typeof id !== 'number')) return false;
  const notifications = (params as { notifications?: unknown } | undefined)?.notifications;
  return typeof notifications === 'object' && notifications !== null && 'taskIds' in notifications;
}

/** The listen id a `notifications/cancelled` names, if the message is one. */
export function cancelledRequestId(message: unknown): RequestId | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { method, id, params } = message as Wire;
  if (method !== 'notifications/cancelled' || id !== undefined) return undefined;
  const requestId = (params as { requestId?: unknown } | undefined)?.requestId;
  return typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined;
}

function errorReply(id: RequestId, code: number, message: string, data?: unknown): ListenMessage {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** The reason a listen request is refused before anything is acknowledged, as its JSON-RPC error; else undefined. */
function refusal(request: { id: RequestId; params: Wire }): ListenMessage | undefined {
  const parsed = LISTEN_PARAMS.safeParse(request.params);
  const meta = (request.params._meta ?? {}) as Wire;
  if (meta[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION) {
    return errorReply(request.id, -32602, `Invalid _meta envelope: ${PROTOCOL_VERSION_META_KEY}: must be ${MODERN_REVISION}`);
  }
  if (!parsed.success) {
    return errorReply(request.id, -32602, "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter");
  }
  const capabilities = meta[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  if (capabilities?.extensions?.[TASKS_EXTENSION] === undefined) {
    const error = new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    return errorReply(request.id, error.code, error.message, error.data);
  }
  return undefined;
}

/** The existing tasks among `ids` (exact ids), each with its handle, in the order asked. */
async function followAll(client: Pick<BackchannelClient, 'follow'>, ids: readonly string[]): Promise<Map<string, TaskRun>> {
  const runs = new Map<string, TaskRun>();
  for (const id of new Set(ids)) {
    try {
      const run = await client.follow(id);
      if (run.snapshot().id === id) runs.set(id, run);
      else run.stop();
    } catch (error) {
      if (!(BridgeError.is(error) && error.code === 'not_found')) {
        for (const held of runs.values()) held.stop();
        throw error;
      }
    }
  }
  return runs;
}

/**
 * Serves one listen request for tasks over `sink`: sends the refusal or the acknowledgement, then the tasks'
 * notifications, and the graceful result once all of them ended. Resolves with the open subscription (undefined
 * when it was refused or had nothing to follow, and is over already).
 */
export async function serveTaskListen(
  client: Pick<BackchannelClient, 'follow' | 'taskResult'>,
  request: { id: RequestId; params: Wire },
  sink: ListenSink,
  serverInfo: { name: string; version: string },
): Promise<TaskSubscription | undefined> {
  const refused = refusal(request);
  if (refused) {
    sink.send(refused);
    sink.end();
    return undefined;
  }
  const asked = LISTEN_PARAMS.parse(request.params).notifications.taskIds ?? [];
  const runs = await followAll(client, asked);
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: request.id };
  sink.send({ jsonrpc: '2.0', method: ACKNOWLEDGED, params: { notifications: { taskIds: [...runs.keys()] }, _meta: stamp } });
  return new Subscription(client, request.id, runs, sink, { ...stamp, [SERVER_INFO_META_KEY]: serverInfo });
}

class Subscription implements TaskSubscription {
  #over = false;
  /** Sends in order: a completed task's notification waits for its whole result before a later one goes. */
  #queue: Promise<void> = Promise.resolve();
  readonly #lastSent = new Map<string, string>();
  readonly #ended = new Set<string>();

  constructor(
    private readonly client: Pick<BackchannelClient, 'taskResult'>,
    readonly id: RequestId,
    private readonly runs: Map<string, TaskRun>,
    private readonly sink: ListenSink,
    private readonly closingMeta: Wire,
  ) {
    if (runs.size === 0) {
      this.#finish(true);
      return;
    }
    for (const [taskId, run] of runs) {
      run.on('update', () => this.#changed(taskId, run.snapshot()));
      // The end, should the handle's stream stop before its last update.
      void run.finished.then(() => this.#changed(taskId, run.snapshot()));
      this.#changed(taskId, run.snapshot());
    }
  }

  cancel(): void {
    this.#finish(false);
  }

  close(): void {
    this.#finish(true);
  }

  #changed(taskId: string, task: TaskSnapshot): void {
    if (this.#over || this.#ended.has(taskId)) return;
    const status = modernStatus(task);
    const key = `${status}:${status === 'input_required' ? task.pendingQuestion?.askId : ''}`;
    if (this.#lastSent.get(taskId) === key) return;
    this.#lastSent.set(taskId, key);
    const ended = isFinished(task.state);
    if (ended) {
      this.#ended.add(taskId);
      this.runs.get(taskId)?.stop();
    }
    this.#queue = this.#queue.then(async () => {
      const params = await detailedTask(this.client, task).catch(() => undefined);
      if (this.#over || params === undefined) return;
      this.sink.send({ jsonrpc: '2.0', method: TASK_NOTIFICATION, params: { ...params, _meta: { [SUBSCRIPTION_ID_META_KEY]: this.id } } });
      if (this.#ended.size === this.runs.size) this.#finish(true);
    });
  }

  #finish(graceful: boolean): void {
    if (this.#over) return;
    this.#over = true;
    for (const run of this.runs.values()) run.stop();
    if (graceful) this.sink.send({ jsonrpc: '2.0', id: this.id, result: { resultType: 'complete', _meta: this.closingMeta } });
    this.sink.end();
  }
}

/**
 * The task subscriptions of one connection (stdio) or one endpoint (HTTP): takes the listen requests for tasks and
 * the cancellations of them out of the message flow before the SDK sees it, and closes what is left at the end.
 */
export class TaskListens {
  readonly #open = new Map<RequestId, TaskSubscription | 'opening'>();
  readonly #cancelledWhileOpening = new Set<RequestId>();

  constructor(
    private readonly client: Pick<BackchannelClient, 'follow' | 'taskResult'>,
    private readonly serverInfo: { name: string; version: string },
  ) {}

  /** The subscriptions open now (tests check that none is left). */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Serves `message` when it is a listen request for tasks (sending over `sink`) or the cancellation of one of ours;
   * true when it was taken, false when it is the SDK's to serve. A second listen with an id still open is refused.
   */
  take(message: unknown, sink: (id: RequestId) => ListenSink): boolean {
    if (listensForTasks(message)) {
      const { id } = message;
      const out = sink(id);
      if (this.#open.has(id)) {
        out.send(errorReply(id, -32600, `Invalid request: subscription ${JSON.stringify(id)} is already open`));
        out.end();
        return true;
      }
      this.#open.set(id, 'opening');
      const ends = { send: (m: ListenMessage) => out.send(m), end: () => (this.#open.delete(id), out.end()) };
      void serveTaskListen(this.client, message, ends, this.serverInfo).then(
        (subscription) => this.#opened(id, subscription),
        (error: unknown) => {
          this.#cancelledWhileOpening.delete(id);
          ends.send(errorReply(id, -32603, `Internal error: ${(error as Error).message}`));
          ends.end();
        },
      );
      return true;
    }
    const cancelled = cancelledRequestId(message);
    if (cancelled === undefined || !this.#open.has(cancelled)) return false;
    const open = this.#open.get(cancelled);
    if (open === 'opening') this.#cancelledWhileOpening.add(cancelled);
    else open?.cancel();
    return true;
  }

  /** Ends every subscription: `graceful` sends each its result first (a server shutting down), else they just stop. */
  closeAll(graceful: boolean): void {
    for (const [id, open] of [...this.#open]) {
      if (open === 'opening') this.#cancelledWhileOpening.add(id);
      else if (graceful) open.close();
      else open.cancel();
    }
  }

  #opened(id: RequestId, subscription: TaskSubscription | undefined): void {
    const cancelled = this.#cancelledWhileOpening.delete(id);
    if (!subscription || !this.#open.has(id)) return; // refused, or over already
    this.#open.set(id, subscription);
    if (cancelled) subscription.cancel();
  }
}
