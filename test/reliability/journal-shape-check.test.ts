/**
 * record-shape.ts checks journal records in place (no copy of each record, which was ~20 MB of the
 * hub's memory at start over 10,000 tasks). Its rules are the zod schema below, which it replaced:
 * the two must agree on every record — real ones, and each field of them missing or of every wrong type.
 */
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { recordProblem } from '../../src/broker/history/record-shape.js';
import { TASK_STATES } from '../../src/model/task.js';

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

function zodAccepts(value: unknown): boolean {
  const parsed = RECORD.safeParse(value);
  if (!parsed.success) return false;
  const record = parsed.data;
  return !(record.e === 'ended' && record.task.id !== record.id);
}

const AT = '2026-12-01T10:00:00.000Z';
const ID = '01900000-0000-7000-8000-000000000001';
const info = { repo: '/r', base: 'main', baseSha: 'abc', branch: 'bc/x', worktree: '/w' };
const spec = {
  command: 'node',
  args: ['a.mjs'],
  cwd: '/',
  label: 'x',
  timeoutMs: 5,
  heartbeatTimeoutMs: 6,
  retries: 1,
  tags: { source: 'cli' },
};
const task = {
  id: ID,
  label: 'x',
  state: 'succeeded',
  reason: 'error',
  message: 'm',
  detail: 'd',
  command: 'node',
  args: ['a.mjs'],
  cwd: '/',
  attempt: 1,
  maxAttempts: 2,
  progress: 50,
  createdAt: AT,
  startedAt: AT,
  endedAt: AT,
  result: { status: 'success', data: { n: 1 } },
  resultSummary: { bytes: 10, preview: '{}', status: 'success' },
  stderrTail: 'tail',
  exitCode: 0,
  signal: null,
  pid: 7,
  worker: 'w1',
  tags: { source: 'cli' },
  counters: { malformed: 0, rejected: 0, ignored: 0 },
};
const GOOD: Record<string, unknown>[] = [
  { e: 'queued', id: ID, at: AT, spec, maxAttempts: 1 },
  { e: 'attempt', id: ID, at: AT, attempt: 1, pid: 5, pidStart: '123' },
  { e: 'progress', id: ID, at: AT, progress: 3, partial: { any: 'thing' } },
  { e: 'ended', id: ID, at: AT, task, spec },
  { e: 'exited', id: ID, at: AT, exitCode: null, signal: 'SIGTERM' },
  {
    e: 'worktree',
    id: ID,
    at: AT,
    worktree: info,
    change: {
      ...info,
      commits: [{ sha: 's', subject: 'x' }],
      files: [{ path: 'a', insertions: 1, deletions: 2 }],
      insertions: 1,
      deletions: 2,
    },
  },
];
const WRONG_VALUES: unknown[] = [undefined, null, 0, 1.5, '', 'x', true, [], ['x'], [1], {}, { a: 1 }, { status: 'x' }];

/** Every record with each field (at every depth) missing, or replaced by each wrong value. */
function* variants(value: unknown): Generator<unknown> {
  yield value;
  if (typeof value !== 'object' || value === null) return;
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    const replace = (v: unknown): unknown => {
      if (Array.isArray(value)) return value.map((x, i) => (String(i) === key ? v : x));
      const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
      if (v === undefined) delete copy[key];
      else copy[key] = v;
      return copy;
    };
    for (const wrong of WRONG_VALUES) yield replace(wrong);
    for (const inner of variants(child)) if (inner !== child) yield replace(inner);
  }
}

describe('journal records are checked in place by the rules of the zod schema', () => {
  test('the checker and the schema agree on real records and on every field missing or wrong', () => {
    let checked = 0;
    for (const good of GOOD) {
      for (const record of variants(good)) {
        const problem = recordProblem(record);
        if ((problem === undefined) !== zodAccepts(record)) throw new Error(`disagree on ${JSON.stringify(record)}: ${problem}`);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(1000);
    for (const odd of [null, 1, 'x', [], {}, { e: 'nope', id: ID, at: AT }, { e: 'ended', id: 'other', at: AT, task }]) {
      expect(recordProblem(odd)).toBeDefined();
      expect(zodAccepts(odd)).toBe(false);
    }
    expect(recordProblem({ e: 'queued', id: ID, at: AT, spec: { ...spec, args: 'a.mjs' }, maxAttempts: 1 })).toBe(
      'spec.args: expected array',
    );
  });
});
