/** An in-process task spec as the hub's `SubmitRequest`, for front-ends that hand their tasks to a hub. */
import { resolve } from 'node:path';
import { isPlainName } from '../bridge/checks.js';
import type { SubmitRequest } from '../bridge/contract.js';
import type { TaskSpec } from '../model/task.js';

/**
 * The hub runs in another directory, so the working directory and a relative command become absolute.
 * What a request cannot carry is refused rather than dropped: an `env` entry that removes a name
 * (`undefined`), a retry policy object. A `signal` stays with the caller, who cancels through the hub.
 */
export function requestForHub(spec: TaskSpec): SubmitRequest {
  const cwd = resolve(spec.cwd ?? process.cwd());
  const looksLikePath = spec.command.includes('/') && !spec.command.startsWith('/');
  const request: SubmitRequest = { command: looksLikePath ? resolve(cwd, spec.command) : spec.command, args: spec.args ?? [], cwd };
  if (spec.label !== undefined) request.label = spec.label;
  if (spec.input !== undefined) request.input = spec.input;
  if (spec.timeoutMs !== undefined) request.timeoutMs = spec.timeoutMs;
  if (spec.heartbeatTimeoutMs !== undefined) request.heartbeatTimeoutMs = spec.heartbeatTimeoutMs;
  if (spec.askTimeoutMs !== undefined) request.askTimeoutMs = spec.askTimeoutMs;
  if (spec.retries !== undefined) {
    if (typeof spec.retries !== 'number') throw new TypeError('A task for the hub takes `retries` as a number, not a policy');
    request.retries = spec.retries;
  }
  if (spec.env !== undefined) request.env = definedEnv(spec.env);
  if (spec.baseEnv !== undefined) request.callerEnv = carriedEnv(spec.baseEnv);
  if (spec.tags !== undefined) request.tags = { ...spec.tags };
  if (spec.origin !== undefined) request.origin = spec.origin;
  if (spec.taskIdArg !== undefined) request.taskIdArg = spec.taskIdArg;
  if (spec.worktree !== undefined) request.worktree = spec.worktree;
  if (spec.parent !== undefined) request.parent = spec.parent;
  return request;
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
