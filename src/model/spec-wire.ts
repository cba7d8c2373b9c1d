/**
 * The copy between an in-process `TaskSpec` and the wire's `TaskRequest`, both ways, driven by the
 * request schema's keys (./task-request.ts): a key is copied as it is unless `IN_PROCESS` says how it
 * differs in process. A new request option is copied with no edit here.
 */
import { isPlainName, TASK_REQUEST_KEYS, type TaskRequest } from './task-request.js';
import type { TaskSpec } from './task.js';

/**
 * The request's fields that are not the same in a `TaskSpec`: the field's name there and the copy each
 * way. Every other key of `TASK_REQUEST` is copied as it is.
 */
const IN_PROCESS: {
  [K in keyof TaskRequest]?: {
    toRequest(spec: TaskSpec): TaskRequest[K] | undefined;
    toSpec(request: TaskRequest, spec: TaskSpec): void;
  };
} = {
  /** In process a retry policy object may be given; a request carries the number of retries only. */
  retries: {
    toRequest: (spec) => {
      if (spec.retries === undefined || typeof spec.retries === 'number') return spec.retries;
      throw new TypeError('A task for the hub takes `retries` as a number, not a policy');
    },
    toSpec: (request, spec) => {
      if (request.retries !== undefined) spec.retries = request.retries;
    },
  },
  /** In process `undefined` removes a name from the environment; a request cannot say that. */
  env: {
    toRequest: (spec) => (spec.env === undefined ? undefined : definedEnv(spec.env)),
    toSpec: (request, spec) => {
      if (request.env !== undefined) spec.env = request.env;
    },
  },
  /** The caller's environment is `baseEnv` in process. */
  callerEnv: {
    toRequest: (spec) => (spec.baseEnv === undefined ? undefined : carriedEnv(spec.baseEnv)),
    toSpec: (request, spec) => {
      if (request.callerEnv !== undefined) spec.baseEnv = request.callerEnv;
    },
  },
};

/**
 * An in-process spec as a request: every field of the schema (in-process only fields such as `signal`
 * stay behind). What a request cannot carry is refused rather than dropped: an `env` entry that removes
 * a name, a retry policy object.
 */
export function requestOfSpec(spec: TaskSpec): TaskRequest {
  const request: Record<string, unknown> = {};
  for (const key of TASK_REQUEST_KEYS) {
    const value = IN_PROCESS[key] ? IN_PROCESS[key].toRequest(spec) : spec[key as keyof TaskSpec];
    if (value !== undefined) request[key] = value;
  }
  return request as TaskRequest;
}

/** A (checked) request as the broker's spec: every field of the schema, renamed where it differs in process. */
export function specOfRequest(request: TaskRequest): TaskSpec {
  const spec: Record<string, unknown> = {};
  for (const key of TASK_REQUEST_KEYS) {
    const mapping = IN_PROCESS[key];
    if (mapping) mapping.toSpec(request, spec as unknown as TaskSpec);
    else if (request[key] !== undefined) spec[key] = request[key];
  }
  return spec as unknown as TaskSpec;
}

/**
 * The caller's environment as a request carries it: names a shell would not accept (Bash's exported
 * functions, `BASH_FUNC_f%%`) stay behind; an in-process run keeps them.
 */
function carriedEnv(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => isPlainName(name)));
}

function definedEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) throw new TypeError(`A task for the hub cannot remove an environment variable (${name})`);
    out[name] = value;
  }
  return out;
}
