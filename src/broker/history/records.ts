/**
 * How a live task is shaped for the journal: what of its spec is kept (and what a Retry of a retired
 * task keeps beside it), and how big a progress record may be.
 */
import { isoNow } from '../../protocol/index.js';
import type { TaskSpec } from '../../model/task.js';
import type { Task } from '../task/task.js';
import type { JournalRecord, RetrySpec, StoredSpec } from './journal.js';

/** Inputs up to this size are kept in history so a finished task can be retried after a restart. */
const MAX_STORED_INPUT_BYTES = 64 * 1024;
/** A partial's data bigger than this is recorded by its size only. */
const MAX_STORED_PARTIAL_CHARS = 4096;

export function storedSpec(task: Task): StoredSpec {
  const spec = task.spec;
  const stored: StoredSpec = { command: spec.command, args: spec.args ?? [], cwd: task.cwd, label: task.label };
  if (spec.timeoutMs !== undefined) stored.timeoutMs = spec.timeoutMs;
  if (spec.heartbeatTimeoutMs !== undefined) stored.heartbeatTimeoutMs = spec.heartbeatTimeoutMs;
  if (task.maxAttempts > 1) stored.retries = task.maxAttempts - 1;
  if (spec.tags) stored.tags = spec.tags;
  if (spec.origin) stored.origin = spec.origin;
  if (spec.worktree !== undefined && spec.worktree !== false) stored.worktree = spec.worktree;
  if (spec.parent !== undefined) stored.parent = spec.parent;
  if (spec.acp !== undefined && spec.acp !== false) stored.acp = spec.acp;
  if (spec.input !== undefined) {
    const json = JSON.stringify(spec.input);
    if (json !== undefined && json.length <= MAX_STORED_INPUT_BYTES) stored.input = spec.input;
  }
  return stored;
}

/**
 * What a Retry of a retired task needs of its spec beyond what history stores (`storedSpec`): the
 * explicit environment, the retry policy and the other settings history leaves out. Not the caller's
 * whole environment (`baseEnv`: a Retry runs with the hub's, as it does after a restart), not an
 * input too big for history, not the abort signal.
 */
export function retrySpec(spec: TaskSpec): RetrySpec | undefined {
  const kept: RetrySpec = {};
  if (spec.env !== undefined && Object.keys(spec.env).length > 0) kept.env = spec.env;
  if (spec.askTimeoutMs !== undefined) kept.askTimeoutMs = spec.askTimeoutMs;
  if (spec.taskIdArg !== undefined) kept.taskIdArg = spec.taskIdArg;
  if (spec.estimatedTokens !== undefined) kept.estimatedTokens = spec.estimatedTokens;
  if (spec.preset !== undefined) kept.preset = spec.preset;
  if (typeof spec.retries === 'object') kept.retries = spec.retries;
  // The tools its caller offered: a Retry offers them again (whoever answers now is the Retry's caller).
  if (spec.tools !== undefined && spec.tools.length > 0) kept.tools = spec.tools;
  return Object.keys(kept).length > 0 ? kept : undefined;
}

function clipForHistory(value: unknown): unknown {
  if (value === undefined) return undefined;
  const json = JSON.stringify(value);
  return json !== undefined && json.length <= MAX_STORED_PARTIAL_CHARS ? value : { truncated: true, chars: json?.length };
}

/** A task's progress as the journal keeps it (a big partial by its size only). */
export function progressRecord(task: Task): JournalRecord {
  return { e: 'progress', id: task.id, at: isoNow(), progress: task.progress, partial: clipForHistory(task.lastPartial) };
}
