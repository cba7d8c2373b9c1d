/**
 * Argument checkers for the bridge's calls (used by the route table in ./calls.ts). Each throws
 * `BridgeError('invalid_request')` with a message in one template and returns a clean value.
 */
import { MAX_TASK_PAGE_SIZE, type InsightsQuery, type SubmitRequest, type TaskPageQuery, type TaskState } from './contract.js';
import { TASK_ORIGINS, TASK_STATES, type TaskOrigin } from '../model/task.js';
import { BridgeError, isRecord } from './errors.js';
import { checkInputSize } from './limits.js';

/** Limits on what the panel may submit; generous, but they keep a bad client from sending megabytes of argv. */
const MAX_STRING = 4096;
const MAX_ARGS = 256;
const MAX_ID = 200;
const MAX_ANSWER = 64 * 1024;
const MAX_MAP_ENTRIES = 64;
/** An environment variable or tag name: what a shell accepts, plus the `.`/`-` some tools use. */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** A name a submission's `env`, `callerEnv` or `tags` may carry (one a shell would accept). */
export function isPlainName(name: string): boolean {
  return NAME.test(name) && name.length <= MAX_ID;
}

export function invalid(message: string): BridgeError {
  return new BridgeError('invalid_request', message);
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `\`${value.slice(0, 40)}\` (string)`;
  if (typeof value === 'number' || typeof value === 'boolean') return `\`${String(value)}\` (${typeof value})`;
  return typeof value;
}

export function checkString(value: unknown, what: string, { allowEmpty = false, max = MAX_STRING } = {}): string {
  if (typeof value !== 'string') throw invalid(`Expected \`${what}\` to be a string, got ${describe(value)}`);
  if (!allowEmpty && value.trim() === '') throw invalid(`Expected \`${what}\` to be a non-empty string`);
  if (value.length > max) throw invalid(`Expected \`${what}\` to be at most ${max} characters, got ${value.length}`);
  return value;
}

/** A task id or ask id. */
export function checkId(value: unknown, what = 'id'): string {
  return checkString(value, what, { max: MAX_ID });
}

/** A list of task ids (the changes to apply, in order). */
export function checkIds(value: unknown, what = 'ids'): string[] {
  if (!Array.isArray(value) || value.length === 0)
    throw invalid(`Expected \`${what}\` to be a non-empty array of task ids, got ${describe(value)}`);
  if (value.length > MAX_ARGS) throw invalid(`Expected at most ${MAX_ARGS} \`${what}\`, got ${value.length}`);
  return value.map((id, i) => checkId(id, `${what}[${i}]`));
}

/** A submission's `worktree`: true, or {base?, includeUncommitted?, reuse?}. */
function checkWorktreeRequest(value: unknown): SubmitRequest['worktree'] {
  if (typeof value === 'boolean') return value;
  if (!isRecord(value)) throw invalid(`Expected \`worktree\` to be true or an object, got ${describe(value)}`);
  const request: Exclude<SubmitRequest['worktree'], boolean | undefined> = {};
  for (const key of Object.keys(value)) {
    if (!['base', 'includeUncommitted', 'reuse'].includes(key)) throw invalid(`Unexpected \`worktree.${key.slice(0, 40)}\``);
  }
  if (value.base !== undefined) request.base = checkString(value.base, 'worktree.base', { max: 256 });
  if (value.includeUncommitted !== undefined)
    request.includeUncommitted = checkBoolean(value.includeUncommitted, 'worktree.includeUncommitted');
  if (value.reuse !== undefined) request.reuse = checkId(value.reuse, 'worktree.reuse');
  return request;
}

/** The text of an answer (may be empty). */
export function checkAnswer(value: unknown): string {
  return checkString(value, 'answer', { allowEmpty: true, max: MAX_ANSWER });
}

/** A cancel reason: optional, one line for the panel. */
export function checkReason(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return checkString(value, 'reason', { max: 500 });
}

export function checkBoolean(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') throw invalid(`Expected \`${what}\` to be a boolean, got ${describe(value)}`);
  return value;
}

function checkNonNegative(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(`Expected \`${what}\` to be a non-negative finite number, got ${describe(value)}`);
  }
  return value;
}

/** A whole environment (`callerEnv`): as many variables, and as long, as Linux lets a process have. */
const ENVIRONMENT_LIMITS = { maxEntries: 8192, maxValue: 128 * 1024 };

/** A flat `{name: string}` object (environment, tags): bounded, names a shell would accept. */
function checkStringMap(
  value: unknown,
  what: string,
  { maxEntries = MAX_MAP_ENTRIES, maxValue = MAX_STRING } = {},
): Record<string, string> {
  if (!isRecord(value)) throw invalid(`Expected \`${what}\` to be an object of strings, got ${describe(value)}`);
  const entries = Object.entries(value);
  if (entries.length > maxEntries) throw invalid(`Expected at most ${maxEntries} entries in \`${what}\`, got ${entries.length}`);
  const clean: Record<string, string> = {};
  for (const [name, text] of entries) {
    if (!isPlainName(name)) throw invalid(`Expected the names in \`${what}\` to be like FOO_BAR, got ${describe(name)}`);
    clean[name] = checkString(text, `${what}.${name}`, { allowEmpty: true, max: maxValue });
  }
  return clean;
}

function checkInput(input: unknown): unknown {
  try {
    checkInputSize(input);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  return input;
}

/**
 * A submission as a door with a fixed origin passes it on (the panel's server and the app's IPC:
 * `panel`, whatever the body says); a body that is no object is left for `checkSubmitRequest` to refuse.
 */
export function withOrigin(body: unknown, door: TaskOrigin): unknown {
  return isRecord(body) ? { ...body, origin: door } : body;
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
  if (value.input !== undefined) request.input = checkInput(value.input);
  if (value.timeoutMs !== undefined) request.timeoutMs = checkNonNegative(value.timeoutMs, 'timeoutMs');
  if (value.heartbeatTimeoutMs !== undefined) {
    request.heartbeatTimeoutMs = checkNonNegative(value.heartbeatTimeoutMs, 'heartbeatTimeoutMs');
  }
  if (value.askTimeoutMs !== undefined) request.askTimeoutMs = checkNonNegative(value.askTimeoutMs, 'askTimeoutMs');
  if (value.env !== undefined) request.env = checkStringMap(value.env, 'env');
  if (value.callerEnv !== undefined) request.callerEnv = checkStringMap(value.callerEnv, 'callerEnv', ENVIRONMENT_LIMITS);
  if (value.tags !== undefined) request.tags = checkStringMap(value.tags, 'tags');
  if (value.origin !== undefined) {
    if (!TASK_ORIGINS.includes(value.origin as TaskOrigin)) {
      throw invalid(`Expected \`origin\` to be one of ${TASK_ORIGINS.join(', ')}, got ${describe(value.origin)}`);
    }
    request.origin = value.origin as TaskOrigin;
  }
  if (value.taskIdArg !== undefined) {
    if (typeof value.taskIdArg !== 'boolean') throw invalid(`Expected \`taskIdArg\` to be a boolean, got ${describe(value.taskIdArg)}`);
    request.taskIdArg = value.taskIdArg;
  }
  if (value.worktree !== undefined) request.worktree = checkWorktreeRequest(value.worktree);
  if (value.parent !== undefined) request.parent = checkId(value.parent, 'parent');
  if (value.retries !== undefined) {
    const retries = checkNonNegative(value.retries, 'retries');
    if (!Number.isInteger(retries) || retries > 100) throw invalid(`Expected \`retries\` to be an integer from 0 to 100, got ${retries}`);
    request.retries = retries;
  }
  return request;
}

function checkTime(value: unknown, what: string): string {
  const text = checkString(value, what, { max: 64 });
  if (!Number.isFinite(Date.parse(text))) throw invalid(`Expected \`${what}\` to be an ISO 8601 time, got ${describe(value)}`);
  return new Date(text).toISOString();
}

/** Checks an insights query and returns a clean copy holding only the known fields. */
export function checkInsightsQuery(value: unknown): InsightsQuery {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw invalid(`Expected the query to be an object, got ${describe(value)}`);
  const query: InsightsQuery = {};
  if (value.since !== undefined) query.since = checkTime(value.since, 'since');
  if (value.until !== undefined) query.until = checkTime(value.until, 'until');
  if (value.agent !== undefined) query.agent = checkString(value.agent, 'agent');
  if (value.model !== undefined) query.model = checkString(value.model, 'model');
  if (value.by !== undefined) {
    if (value.by !== 'agent' && value.by !== 'model') throw invalid(`Expected \`by\` to be "agent" or "model", got ${describe(value.by)}`);
    query.by = value.by;
  }
  if (value.pick !== undefined) {
    if (!isRecord(value.pick)) throw invalid(`Expected \`pick\` to be an object, got ${describe(value.pick)}`);
    query.pick = { hour: checkTime(value.pick.hour, 'pick.hour') };
    if (value.pick.key !== undefined) query.pick.key = checkString(value.pick.key, 'pick.key');
  }
  return query;
}

function checkState(value: unknown, what: string): TaskState {
  if (typeof value !== 'string' || !(TASK_STATES as readonly string[]).includes(value)) {
    throw invalid(`Expected \`${what}\` to be one of ${TASK_STATES.join(', ')}, got ${describe(value)}`);
  }
  return value as TaskState;
}

/** Checks a task page query and returns a clean copy holding only the known fields. */
export function checkTaskPageQuery(value: unknown): TaskPageQuery {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw invalid(`Expected the query to be an object, got ${describe(value)}`);
  const query: TaskPageQuery = {};
  if (value.limit !== undefined) {
    const limit = value.limit;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_TASK_PAGE_SIZE) {
      throw invalid(`Expected \`limit\` to be an integer from 1 to ${MAX_TASK_PAGE_SIZE}, got ${describe(limit)}`);
    }
    query.limit = limit;
  }
  if (value.before !== undefined) query.before = checkString(value.before, 'before', { max: MAX_ID * 2 });
  if (value.state !== undefined) {
    query.state = Array.isArray(value.state)
      ? value.state.slice(0, TASK_STATES.length).map((state, i) => checkState(state, `state[${i}]`))
      : checkState(value.state, 'state');
  }
  return query;
}
