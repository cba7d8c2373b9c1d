/**
 * The shape a journal record must have to be applied. A line of valid JSON is still refused when it
 * is the wrong shape — an `ended` without its task, a `queued` without a spec, a spec whose `args` is
 * a string, a label that is a number — because the rest of the broker (and `tasks`, `show`, the
 * panel) trusts a history entry's fields: one such record stopped the broker from starting or broke
 * every listing of the history. The journal skips it with the same warning as a corrupt line.
 *
 * Only the fields something reads are checked; unknown fields are kept (a newer version may add some).
 */
import { z } from 'zod';
import { TASK_STATES } from '../../model/task.js';

const text = z.string();
const count = z.number().finite();

const storedSpec = z.object({
  command: text,
  args: z.array(text),
  cwd: text,
  label: text,
  timeoutMs: count.optional(),
  heartbeatTimeoutMs: count.optional(),
  retries: count.optional(),
  tags: z.record(text, text).optional(),
});

const snapshot = z.object({
  id: text,
  label: text,
  state: z.enum(TASK_STATES as [string, ...string[]]),
  reason: text.optional(),
  message: text.optional(),
  detail: text.optional(),
  command: text,
  args: z.array(text),
  cwd: text,
  attempt: count,
  maxAttempts: count,
  progress: count.optional(),
  createdAt: text,
  startedAt: text.optional(),
  endedAt: text.optional(),
  result: z.object({ status: text }).optional(),
  resultSummary: z.object({ bytes: count, preview: text, status: text }).optional(),
  stderrTail: text.optional(),
  exitCode: count.nullable().optional(),
  signal: text.nullable().optional(),
  pid: count.optional(),
  worker: text.optional(),
  tags: z.record(text, text).optional(),
  counters: z.object({ malformed: count, rejected: count, ignored: count }),
});

const worktreeInfo = { repo: text, base: text, baseSha: text, branch: text, worktree: text };
const change = z.object({
  ...worktreeInfo,
  commits: z.array(z.object({ sha: text, subject: text })),
  files: z.array(z.object({ path: text, insertions: count, deletions: count })),
  insertions: count,
  deletions: count,
});

const base = { id: text, at: text };
const RECORD = z.discriminatedUnion('e', [
  z.object({ e: z.literal('queued'), ...base, spec: storedSpec, maxAttempts: count }),
  z.object({ e: z.literal('attempt'), ...base, attempt: count, pid: count.optional(), pidStart: text.optional() }),
  z.object({ e: z.literal('progress'), ...base, progress: count.optional() }),
  z.object({ e: z.literal('ended'), ...base, task: snapshot, spec: storedSpec.optional() }),
  z.object({ e: z.literal('exited'), ...base, exitCode: count.nullable().optional(), signal: text.nullable().optional() }),
  z.object({ e: z.literal('worktree'), ...base, worktree: z.object(worktreeInfo).optional(), change: change.optional() }),
]);

/** Why `value` is not a journal record the broker can apply, or undefined when it is one. */
export function recordProblem(value: unknown): string | undefined {
  const parsed = RECORD.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return issue ? `${issue.path.join('.') || 'record'}: ${issue.message}` : 'not a journal record';
  }
  const record = parsed.data;
  if (record.e === 'ended' && record.task.id !== record.id) return `task.id: not the record's id ${record.id}`;
  return undefined;
}
