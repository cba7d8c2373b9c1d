/**
 * The bridge's calls as data: ONE table (`ROUTES`) declares every request/reply call once — its
 * HTTP verb and path and the zod schema of each argument — and everything else is derived from it: the method
 * list, `checkArgs`, the HTTP routes (./http-routes.ts, both directions), the IPC channels and the
 * client (`bridgeClient`). A new call is a method on `BackchannelBridge` (./contract.ts), a row
 * here, and its implementation in hub/broker-bridge.ts.
 *
 * Both hosts (Electron IPC handlers and the headless HTTP server) run every call through
 * `dispatch`, so they validate and fail the same way. Runs anywhere: no Node or DOM imports.
 */
import type * as z from 'zod/mini';
import type { BackchannelBridge, BridgeErrorBody } from './contract.js';
import {
  ANNOTATIONS,
  ANSWER,
  ANSWER_DOOR,
  checkWith,
  describe,
  FIRE_PAGE_QUERY,
  ID,
  IDS,
  INSIGHTS_QUERY,
  invalid,
  PAUSED,
  REASON,
  SCHEDULE_NAME,
  SCHEDULE_REQUEST,
  SUBMIT_REQUEST,
  TASK_PAGE_QUERY,
  TOOL_ANSWER,
} from './checks.js';
import { BridgeError, errorFromBody, isRecord, toErrorBody } from '../model/errors.js';

/** Every bridge method except `subscribe`, which is a stream, not a call. */
export type BridgeMethod = Exclude<keyof BackchannelBridge, 'subscribe'>;
export type BridgeArgs<M extends BridgeMethod> = Parameters<BackchannelBridge[M]>;
export type BridgeResult<M extends BridgeMethod> = Awaited<ReturnType<BackchannelBridge[M]>>;

/** What a host sends back for one call: the value, or the reason it was refused. */
export type BridgeReply = { ok: true; value: unknown } | ({ ok: false } & BridgeErrorBody);

/**
 * A call's arguments, in order: each a name and the zod schema of its value. The mapped type makes an
 * argument of the wrong type (or a missing one) a compile error.
 */
export type RouteParams<M extends BridgeMethod> = ParamsOf<BridgeArgs<M>>;

type ParamsOf<A extends readonly unknown[]> = { readonly [I in keyof A]: readonly [name: string, schema: z.core.$ZodType<A[I]>] };

export interface Route<M extends BridgeMethod> {
  verb: 'GET' | 'POST' | 'PUT';
  /** Path below `/api/`. A `:name` segment carries the argument of that name (URL-encoded). */
  path: string;
  /**
   * The call's arguments, in order, with their schemas. Each travels in the path (`:name`), or as a
   * field of the JSON body — except `body`, which is the whole JSON body.
   */
  params: RouteParams<M>;
}

/** A route as the hosts and clients use it: its argument names and their checker, derived from `params`. */
export interface CheckedRoute<M extends BridgeMethod> extends Route<M> {
  /** The argument names, in order (`params`' names). */
  args: readonly string[];
  /** Checks the raw arguments (an array) against `params`; throws `BridgeError('invalid_request')`. */
  check(args: readonly unknown[]): BridgeArgs<M>;
}

/** The argument that stands for the whole JSON body: its fields are named by their own path (`limit`). */
const WHOLE_BODY = 'body';

/** The one table. The mapped type makes a missing or misspelt method a compile error. */
const TABLE: { readonly [M in BridgeMethod]: Route<M> } = {
  info: { verb: 'GET', path: 'info', params: [] },
  listTasks: { verb: 'GET', path: 'tasks', params: [] },
  // POST, as insights: the query is a JSON body (a GET carries none).
  listTaskPage: { verb: 'POST', path: 'tasks/page', params: [['body', TASK_PAGE_QUERY]] },
  getTask: { verb: 'GET', path: 'tasks/:id', params: [['id', ID]] },
  taskResult: { verb: 'GET', path: 'tasks/:id/result', params: [['id', ID]] },
  submit: { verb: 'POST', path: 'tasks', params: [['body', SUBMIT_REQUEST]] },
  cancel: {
    verb: 'POST',
    path: 'tasks/:id/cancel',
    params: [
      ['id', ID],
      ['reason', REASON],
    ],
  },
  retry: { verb: 'POST', path: 'tasks/:id/retry', params: [['id', ID]] },
  answer: {
    verb: 'POST',
    path: 'tasks/:id/answer',
    params: [
      ['id', ID],
      ['askId', ID],
      ['answer', ANSWER],
      ['via', ANSWER_DOOR],
    ],
  },
  answerToolCall: {
    verb: 'POST',
    path: 'tasks/:id/tool-calls/:callId',
    params: [
      ['id', ID],
      ['callId', ID],
      ['answer', TOOL_ANSWER],
    ],
  },
  annotate: {
    verb: 'POST',
    path: 'tasks/:id/annotate',
    params: [
      ['id', ID],
      ['meta', ANNOTATIONS],
    ],
  },
  setPaused: { verb: 'PUT', path: 'paused', params: [['paused', PAUSED]] },
  openLog: { verb: 'POST', path: 'log/open', params: [] },
  fleet: { verb: 'GET', path: 'fleet', params: [] },
  insights: { verb: 'POST', path: 'insights', params: [['body', INSIGHTS_QUERY]] },
  attachment: {
    verb: 'GET',
    path: 'tasks/:id/attachments/:name',
    params: [
      ['id', ID],
      ['name', ID],
    ],
  },
  taskChange: { verb: 'GET', path: 'tasks/:id/change', params: [['id', ID]] },
  applyChanges: { verb: 'POST', path: 'changes/apply', params: [['ids', IDS]] },
  discardChange: { verb: 'POST', path: 'tasks/:id/change/discard', params: [['id', ID]] },
  keepBranch: { verb: 'POST', path: 'tasks/:id/change/keep', params: [['id', ID]] },
  listWorktrees: { verb: 'GET', path: 'worktrees', params: [] },
  listSchedules: { verb: 'GET', path: 'schedules', params: [] },
  // POST, as listTaskPage: the page query is a JSON body.
  getSchedule: {
    verb: 'POST',
    path: 'schedules/:name/fires',
    params: [
      ['name', SCHEDULE_NAME],
      ['body', FIRE_PAGE_QUERY],
    ],
  },
  addSchedule: { verb: 'POST', path: 'schedules', params: [['body', SCHEDULE_REQUEST]] },
  setSchedulePaused: {
    verb: 'PUT',
    path: 'schedules/:name/paused',
    params: [
      ['name', SCHEDULE_NAME],
      ['paused', PAUSED],
    ],
  },
  removeSchedule: { verb: 'POST', path: 'schedules/:name/remove', params: [['name', SCHEDULE_NAME]] },
  runScheduleNow: { verb: 'POST', path: 'schedules/:name/run', params: [['name', SCHEDULE_NAME]] },
};

function checked<M extends BridgeMethod>(route: Route<M>): CheckedRoute<M> {
  const params = route.params as unknown as readonly (readonly [string, z.core.$ZodType])[];
  return {
    ...route,
    args: params.map(([name]) => name),
    check: (args) => params.map(([name, schema], i) => checkWith(schema, args[i], name === WHOLE_BODY ? undefined : name)) as BridgeArgs<M>,
  };
}

/** The one route table, each row with its argument names and checker (see `TABLE`). */
export const ROUTES = Object.fromEntries(Object.entries(TABLE).map(([method, route]) => [method, checked(route)])) as unknown as {
  readonly [M in BridgeMethod]: CheckedRoute<M>;
};

export const BRIDGE_METHODS = Object.keys(ROUTES) as readonly BridgeMethod[];

function isBridgeMethod(name: unknown): name is BridgeMethod {
  return typeof name === 'string' && Object.hasOwn(ROUTES, name);
}

/** Checks the positional arguments of one call; throws `BridgeError('invalid_request')`. */
export function checkArgs<M extends BridgeMethod>(method: M, args: unknown): BridgeArgs<M> {
  if (!Array.isArray(args)) throw invalid(`Expected the arguments of ${method} to be an array`);
  if (!isBridgeMethod(method)) throw invalid(`Unknown bridge method ${describe(method)}`);
  return (ROUTES[method] as CheckedRoute<M>).check(args);
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
