/**
 * The bridge's calls as data: ONE table (`ROUTES`) declares every request/reply call once — its
 * HTTP verb and path and its argument checker — and everything else is derived from it: the method
 * list, `checkArgs`, the HTTP routes (./http-routes.ts, both directions), the IPC channels and the
 * client (`bridgeClient`). A new call is a method on `BackchannelBridge` (./contract.ts), a row
 * here, and its implementation in hub/broker-bridge.ts.
 *
 * Both hosts (Electron IPC handlers and the headless HTTP server) run every call through
 * `dispatch`, so they validate and fail the same way. Runs anywhere: no Node or DOM imports.
 */
import type { BackchannelBridge, BridgeErrorBody } from './contract.js';
import {
  checkAnswer,
  checkBoolean,
  checkId,
  checkIds,
  checkInsightsQuery,
  checkReason,
  checkSubmitRequest,
  checkTaskPageQuery,
  describe,
  invalid,
} from './checks.js';
import { BridgeError, errorFromBody, isRecord, toErrorBody } from './errors.js';

export { BridgeError, errorFromBody, HTTP_STATUS, type BridgeErrorCode } from './errors.js';

/** Every bridge method except `subscribe`, which is a stream, not a call. */
export type BridgeMethod = Exclude<keyof BackchannelBridge, 'subscribe'>;
export type BridgeArgs<M extends BridgeMethod> = Parameters<BackchannelBridge[M]>;
export type BridgeResult<M extends BridgeMethod> = Awaited<ReturnType<BackchannelBridge[M]>>;

/** What a host sends back for one call: the value, or the reason it was refused. */
export type BridgeReply = { ok: true; value: unknown } | ({ ok: false } & BridgeErrorBody);

export interface Route<M extends BridgeMethod> {
  verb: 'GET' | 'POST' | 'PUT';
  /** Path below `/api/`. A `:name` segment carries the argument of that name (URL-encoded). */
  path: string;
  /**
   * The call's argument names, in order. Each travels in the path (`:name`), or as a field of the
   * JSON body — except `body`, which is the whole JSON body.
   */
  args: readonly string[];
  /** Checks the raw arguments (an array); throws `BridgeError('invalid_request')`. */
  check(args: readonly unknown[]): BridgeArgs<M>;
}

/** The one table. The mapped type makes a missing or misspelt method a compile error. */
export const ROUTES: { readonly [M in BridgeMethod]: Route<M> } = {
  info: { verb: 'GET', path: 'info', args: [], check: () => [] },
  listTasks: { verb: 'GET', path: 'tasks', args: [], check: () => [] },
  // POST, as insights: the query is a JSON body (a GET carries none).
  listTaskPage: { verb: 'POST', path: 'tasks/page', args: ['body'], check: (a) => [checkTaskPageQuery(a[0])] },
  getTask: { verb: 'GET', path: 'tasks/:id', args: ['id'], check: (a) => [checkId(a[0])] },
  taskResult: { verb: 'GET', path: 'tasks/:id/result', args: ['id'], check: (a) => [checkId(a[0])] },
  submit: { verb: 'POST', path: 'tasks', args: ['body'], check: (a) => [checkSubmitRequest(a[0])] },
  cancel: { verb: 'POST', path: 'tasks/:id/cancel', args: ['id', 'reason'], check: (a) => [checkId(a[0]), checkReason(a[1])] },
  retry: { verb: 'POST', path: 'tasks/:id/retry', args: ['id'], check: (a) => [checkId(a[0])] },
  answer: {
    verb: 'POST',
    path: 'tasks/:id/answer',
    args: ['id', 'askId', 'answer'],
    check: (a) => [checkId(a[0]), checkId(a[1], 'askId'), checkAnswer(a[2])],
  },
  setPaused: { verb: 'PUT', path: 'paused', args: ['paused'], check: (a) => [checkBoolean(a[0], 'paused')] },
  openLog: { verb: 'POST', path: 'log/open', args: [], check: () => [] },
  fleet: { verb: 'GET', path: 'fleet', args: [], check: () => [] },
  insights: { verb: 'POST', path: 'insights', args: ['body'], check: (a) => [checkInsightsQuery(a[0])] },
  attachment: {
    verb: 'GET',
    path: 'tasks/:id/attachments/:name',
    args: ['id', 'name'],
    check: (a) => [checkId(a[0]), checkId(a[1], 'name')],
  },
  taskChange: { verb: 'GET', path: 'tasks/:id/change', args: ['id'], check: (a) => [checkId(a[0])] },
  applyChanges: { verb: 'POST', path: 'changes/apply', args: ['ids'], check: (a) => [checkIds(a[0])] },
  discardChange: { verb: 'POST', path: 'tasks/:id/change/discard', args: ['id'], check: (a) => [checkId(a[0])] },
  keepBranch: { verb: 'POST', path: 'tasks/:id/change/keep', args: ['id'], check: (a) => [checkId(a[0])] },
  listWorktrees: { verb: 'GET', path: 'worktrees', args: [], check: () => [] },
};

export const BRIDGE_METHODS = Object.keys(ROUTES) as readonly BridgeMethod[];

function isBridgeMethod(name: unknown): name is BridgeMethod {
  return typeof name === 'string' && Object.hasOwn(ROUTES, name);
}

/** Checks the positional arguments of one call; throws `BridgeError('invalid_request')`. */
export function checkArgs<M extends BridgeMethod>(method: M, args: unknown): BridgeArgs<M> {
  if (!Array.isArray(args)) throw invalid(`Expected the arguments of ${method} to be an array`);
  if (!isBridgeMethod(method)) throw invalid(`Unknown bridge method ${describe(method)}`);
  return (ROUTES[method] as Route<M>).check(args);
}

/**
 * The one entry point both hosts use: validates `method` and `args`, calls the bridge and wraps the
 * outcome. Never throws. `undefined` values become `null` so the reply is the same after JSON.
 */
export async function dispatch(bridge: BackchannelBridge, method: unknown, args: unknown): Promise<BridgeReply> {
  try {
    if (!isBridgeMethod(method)) throw invalid(`Unknown bridge method ${describe(method)}`);
    const checked = checkArgs(method, args);
    const call = bridge[method] as (...a: unknown[]) => Promise<unknown>;
    const value = await call.apply(bridge, checked);
    return { ok: true, value: value === undefined ? null : value };
  } catch (error) {
    return { ok: false, ...toErrorBody(error) };
  }
}

/** Client side: the value of a reply, or the `BridgeError` it carries. */
export function unwrapReply<T>(reply: unknown): T {
  if (isRecord(reply) && reply.ok === true) return (reply.value ?? undefined) as T;
  if (isRecord(reply) && reply.ok === false && isRecord(reply.error)) {
    throw errorFromBody(reply);
  }
  throw new BridgeError('internal', 'Malformed reply from the bridge host');
}

/** Sends one bridge call over some transport and resolves with its result (or rejects with a BridgeError). */
export type BridgeCall = <M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>) => Promise<BridgeResult<M>>;

/**
 * A client-side `BackchannelBridge` from a transport's `call` and `subscribe`: every request/reply
 * method is the same call by name, so the IPC and HTTP clients only differ in those two.
 */
export function bridgeClient(call: BridgeCall, subscribe: BackchannelBridge['subscribe']): BackchannelBridge {
  const client: Record<string, unknown> = { subscribe };
  for (const method of BRIDGE_METHODS) {
    client[method] = (...args: unknown[]) => (call as (method: BridgeMethod, ...args: unknown[]) => Promise<unknown>)(method, ...args);
  }
  return client as unknown as BackchannelBridge;
}
