/**
 * The shape a journal record must have to be applied. A line of valid JSON is still refused when it
 * is the wrong shape — an `ended` without its task, a `queued` without a spec, a spec whose `args` is
 * a string, a label that is a number — because the rest of the broker (and `tasks`, `show`, the
 * panel) trusts a history entry's fields: one such record stopped the broker from starting or broke
 * every listing of the history. The journal skips it with the same warning as a corrupt line.
 *
 * Only the fields something reads are checked; unknown fields are kept (a newer version may add some).
 *
 * Checked in place, without building a copy of the record: a schema library's parse copies every
 * record it accepts, and at start over 10,000 tasks of history that garbage was ~20 MB of the hub's
 * resident memory (docs/performance.md § How cost grows with history). test/reliability/journal-shape.test.ts holds the rules as a zod
 * schema and checks both agree.
 */
import { TASK_STATES } from '../../model/task.js';

/** Why `value` does not fit (`path: what was expected`), or undefined when it fits. */
type Check = (value: unknown) => string | undefined;

const at = (key: string, problem: string): string => (problem.includes(': ') ? `${key}.${problem}` : `${key}: ${problem}`);

const text: Check = (v) => (typeof v === 'string' ? undefined : 'expected string');
const count: Check = (v) => (typeof v === 'number' && Number.isFinite(v) ? undefined : 'expected number');
const optional =
  (check: Check): Check =>
  (v) =>
    v === undefined ? undefined : check(v);
const nullable =
  (check: Check): Check =>
  (v) =>
    v === null ? undefined : check(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function object(shape: Record<string, Check>): Check {
  const keys = Object.keys(shape);
  return (v) => {
    if (!isObject(v)) return 'expected object';
    for (const key of keys) {
      const problem = shape[key]!(v[key]);
      if (problem !== undefined) return at(key, problem);
    }
    return undefined;
  };
}

function array(item: Check): Check {
  return (v) => {
    if (!Array.isArray(v)) return 'expected array';
    for (let i = 0; i < v.length; i++) {
      const problem = item(v[i]);
      if (problem !== undefined) return at(String(i), problem);
    }
    return undefined;
  };
}

const stringRecord: Check = (v) => {
  if (!isObject(v)) return 'expected record';
  for (const key of Object.keys(v)) if (typeof v[key] !== 'string') return at(key, 'expected string');
  return undefined;
};

const STATES = new Set<unknown>(TASK_STATES);
const state: Check = (v) => (STATES.has(v) ? undefined : `expected one of ${TASK_STATES.join('|')}`);
const literal =
  (value: string): Check =>
  (v) =>
    v === value ? undefined : `expected "${value}"`;

const storedSpec = object({
  command: text,
  args: array(text),
  cwd: text,
  label: text,
  timeoutMs: optional(count),
  heartbeatTimeoutMs: optional(count),
  retries: optional(count),
  tags: optional(stringRecord),
});

const snapshot = object({
  id: text,
  label: text,
  state,
  reason: optional(text),
  message: optional(text),
  detail: optional(text),
  command: text,
  args: array(text),
  cwd: text,
  attempt: count,
  maxAttempts: count,
  progress: optional(count),
  createdAt: text,
  startedAt: optional(text),
  endedAt: optional(text),
  result: optional(object({ status: text })),
  resultSummary: optional(object({ bytes: count, preview: text, status: text })),
  stderrTail: optional(text),
  exitCode: optional(nullable(count)),
  signal: optional(nullable(text)),
  pid: optional(count),
  worker: optional(text),
  tags: optional(stringRecord),
  counters: object({ malformed: count, rejected: count, ignored: count }),
});

const worktreeInfo = { repo: text, base: text, baseSha: text, branch: text, worktree: text };
const change = object({
  ...worktreeInfo,
  commits: array(object({ sha: text, subject: text })),
  files: array(object({ path: text, insertions: count, deletions: count })),
  insertions: count,
  deletions: count,
});

const base = { id: text, at: text };
const RECORDS: Record<string, Check> = {
  queued: object({ e: literal('queued'), ...base, spec: storedSpec, maxAttempts: count }),
  attempt: object({ e: literal('attempt'), ...base, attempt: count, pid: optional(count), pidStart: optional(text) }),
  progress: object({ e: literal('progress'), ...base, progress: optional(count) }),
  ended: object({ e: literal('ended'), ...base, task: snapshot, spec: optional(storedSpec) }),
  exited: object({ e: literal('exited'), ...base, exitCode: optional(nullable(count)), signal: optional(nullable(text)) }),
  worktree: object({ e: literal('worktree'), ...base, worktree: optional(object(worktreeInfo)), change: optional(change) }),
};

/** Why `value` is not a journal record the broker can apply, or undefined when it is one. */
export function recordProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'record: expected object';
  const check = typeof value.e === 'string' && Object.hasOwn(RECORDS, value.e) ? RECORDS[value.e] : undefined;
  if (!check) return `e: expected one of ${Object.keys(RECORDS).join('|')}`;
  const problem = check(value);
  if (problem !== undefined) return problem;
  const task = value.task as { id?: unknown } | undefined;
  if (value.e === 'ended' && task?.id !== value.id) return `task.id: not the record's id ${String(value.id)}`;
  return undefined;
}
