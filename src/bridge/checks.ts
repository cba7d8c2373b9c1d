/**
 * Argument checkers for the bridge's calls (used by the route table in ./calls.ts). Each throws
 * `BridgeError('invalid_request')` with a message in one template and returns a clean value.
 */
import { MAX_TASK_PAGE_SIZE, type InsightsQuery, type SubmitRequest, type TaskPageQuery, type TaskState } from './contract.js';
import { TASK_STATES, type TaskOrigin } from '../model/task.js';
import { checkTaskRequest, isPlainName, MAX_ARGS, MAX_ID, MAX_STRING } from '../model/task-request.js';
import { describe } from '../model/shapes.js';
import { BridgeError, isRecord } from './errors.js';

export { describe, isPlainName };

const MAX_ANSWER = 64 * 1024;

export function invalid(message: string): BridgeError {
  return new BridgeError('invalid_request', message);
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

/**
 * A submission as a door with a fixed origin passes it on (the panel's server and the app's IPC:
 * `panel`, whatever the body says); a body that is no object is left for `checkSubmitRequest` to refuse.
 */
export function withOrigin(body: unknown, door: TaskOrigin): unknown {
  return isRecord(body) ? { ...body, origin: door } : body;
}

/** Checks a submit request and returns a clean copy holding only the known fields (the schema: TASK_REQUEST). */
export function checkSubmitRequest(value: unknown): SubmitRequest {
  return checkTaskRequest(value, invalid);
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
