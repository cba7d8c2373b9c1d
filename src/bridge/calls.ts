/**
 * The bridge's calls as data: names, argument checks, error shape and one `dispatch` function.
 * Both hosts (Electron IPC handlers and the headless HTTP server) run every call through
 * `dispatch`, so they validate and fail the same way; both clients (preload, http-bridge) turn a
 * refused call back into a `BridgeError`. Runs anywhere: no Node or DOM imports.
 */
import type { BackchannelBridge, BridgeErrorBody, SubmitRequest } from './contract.js';

export const BRIDGE_METHODS = ['info', 'listTasks', 'getTask', 'submit', 'cancel', 'retry', 'answer', 'setPaused', 'openLog'] as const;

/** Every bridge method except `subscribe`, which is a stream, not a call. */
export type BridgeMethod = (typeof BRIDGE_METHODS)[number];
export type BridgeArgs<M extends BridgeMethod> = Parameters<BackchannelBridge[M]>;
export type BridgeResult<M extends BridgeMethod> = Awaited<ReturnType<BackchannelBridge[M]>>;

export type BridgeErrorCode = BridgeErrorBody['error']['code'];

/** What a host sends back for one call: the value, or the reason it was refused. */
export type BridgeReply = { ok: true; value: unknown } | ({ ok: false } & BridgeErrorBody);

const BRAND = Symbol.for('backchannel.BridgeError');

/** A refused bridge call. Survives JSON (code + message) and is recognisable across realms. */
export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  readonly [BRAND] = true;

  constructor(
    readonly code: BridgeErrorCode,
    message: string,
  ) {
    super(message);
  }

  static is(value: unknown): value is BridgeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  toBody(): BridgeErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/** HTTP status for each error code (the IPC host carries the code itself). */
export const HTTP_STATUS: Record<BridgeErrorCode, number> = {
  not_found: 404,
  invalid_request: 400,
  conflict: 409,
  internal: 500,
};

export function isBridgeMethod(name: unknown): name is BridgeMethod {
  return typeof name === 'string' && (BRIDGE_METHODS as readonly string[]).includes(name);
}

/** Limits on what the panel may submit; generous, but they keep a bad client from sending megabytes of argv. */
const MAX_STRING = 4096;
const MAX_ARGS = 256;
const MAX_ANSWER = 64 * 1024;

function invalid(message: string): BridgeError {
  return new BridgeError('invalid_request', message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkString(value: unknown, what: string, { allowEmpty = false, max = MAX_STRING } = {}): string {
  if (typeof value !== 'string') throw invalid(`Expected \`${what}\` to be a string, got ${describe(value)}`);
  if (!allowEmpty && value.trim() === '') throw invalid(`Expected \`${what}\` to be a non-empty string`);
  if (value.length > max) throw invalid(`Expected \`${what}\` to be at most ${max} characters, got ${value.length}`);
  return value;
}

function checkNonNegative(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(`Expected \`${what}\` to be a non-negative finite number, got ${describe(value)}`);
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `\`${value.slice(0, 40)}\` (string)`;
  if (typeof value === 'number' || typeof value === 'boolean') return `\`${String(value)}\` (${typeof value})`;
  return typeof value;
}

/** Checks a submit request and returns a clean copy holding only the known fields. */
export function checkSubmitRequest(value: unknown): SubmitRequest {
  if (!isRecord(value)) throw invalid(`Expected the request to be an object, got ${describe(value)}`);
  const request: SubmitRequest = { command: checkString(value.command, 'command') };
  if (value.args !== undefined) {
    if (!Array.isArray(value.args)) throw invalid(`Expected \`args\` to be an array of strings, got ${describe(value.args)}`);
    if (value.args.length > MAX_ARGS) throw invalid(`Expected at most ${MAX_ARGS} \`args\`, got ${value.args.length}`);
    request.args = value.args.map((arg, i) => checkString(arg, `args[${i}]`, { allowEmpty: true }));
  }
  if (value.cwd !== undefined && value.cwd !== '') request.cwd = checkString(value.cwd, 'cwd');
  if (value.label !== undefined && value.label !== '') request.label = checkString(value.label, 'label');
  if (value.input !== undefined) request.input = value.input;
  if (value.timeoutMs !== undefined) request.timeoutMs = checkNonNegative(value.timeoutMs, 'timeoutMs');
  if (value.heartbeatTimeoutMs !== undefined) {
    request.heartbeatTimeoutMs = checkNonNegative(value.heartbeatTimeoutMs, 'heartbeatTimeoutMs');
  }
  if (value.retries !== undefined) {
    const retries = checkNonNegative(value.retries, 'retries');
    if (!Number.isInteger(retries) || retries > 100) throw invalid(`Expected \`retries\` to be an integer from 0 to 100, got ${retries}`);
    request.retries = retries;
  }
  return request;
}

/** Checks the positional arguments of one call; throws `BridgeError('invalid_request')`. */
export function checkArgs<M extends BridgeMethod>(method: M, args: unknown): BridgeArgs<M> {
  if (!Array.isArray(args)) throw invalid(`Expected the arguments of ${method} to be an array`);
  const checked = ((): unknown[] => {
    switch (method) {
      case 'info':
      case 'listTasks':
      case 'openLog':
        return [];
      case 'getTask':
      case 'cancel':
      case 'retry':
        return [checkString(args[0], 'id', { max: 200 })];
      case 'submit':
        return [checkSubmitRequest(args[0])];
      case 'answer':
        return [
          checkString(args[0], 'id', { max: 200 }),
          checkString(args[1], 'askId', { max: 200 }),
          checkString(args[2], 'answer', { allowEmpty: true, max: MAX_ANSWER }),
        ];
      case 'setPaused':
        if (typeof args[0] !== 'boolean') throw invalid(`Expected \`paused\` to be a boolean, got ${describe(args[0])}`);
        return [args[0]];
      default:
        throw invalid(`Unknown bridge method ${describe(method)}`);
    }
  })();
  return checked as BridgeArgs<M>;
}

/** Turns anything thrown by a bridge implementation into the shared error body. */
export function toErrorBody(error: unknown): BridgeErrorBody {
  if (BridgeError.is(error)) return error.toBody();
  const message = error instanceof Error ? error.message : String(error);
  return { error: { code: 'internal', message } };
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
    throw errorFromBody(reply as unknown as BridgeErrorBody);
  }
  throw new BridgeError('internal', 'Malformed reply from the bridge host');
}

export function errorFromBody(body: unknown): BridgeError {
  if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
    const code = body.error.code;
    const known = code === 'not_found' || code === 'invalid_request' || code === 'conflict' || code === 'internal';
    return new BridgeError(known ? code : 'internal', body.error.message);
  }
  return new BridgeError('internal', 'Malformed error from the bridge host');
}

/** Sends one bridge call over some transport and resolves with its result (or rejects with a BridgeError). */
export type BridgeCall = <M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>) => Promise<BridgeResult<M>>;

/**
 * A client-side `BackchannelBridge` from a transport's `call` and `subscribe`: every request/reply
 * method is the same call by name, so the IPC and HTTP clients only differ in those two.
 */
export function bridgeClient(call: BridgeCall, subscribe: BackchannelBridge['subscribe']): BackchannelBridge {
  return {
    info: () => call('info'),
    listTasks: () => call('listTasks'),
    getTask: (id) => call('getTask', id),
    subscribe,
    submit: (request) => call('submit', request),
    cancel: async (id) => {
      await call('cancel', id);
    },
    retry: (id) => call('retry', id),
    answer: async (id, askId, answer) => {
      await call('answer', id, askId, answer);
    },
    setPaused: async (paused) => {
      await call('setPaused', paused);
    },
    openLog: () => call('openLog'),
  };
}
