/**
 * Issue 27: a page walks history from its newest end (OrderedHistory) instead of filtering and
 * sorting all of it. Every page must still be what filtering and sorting would give: checked
 * against that reference over histories with creation-time ties, tasks that finished (and so were
 * added) out of creation order, removals, replaced entries, live tasks, state filters and cursors.
 */
import { describe, expect, test } from 'vitest';
import { TaskRegistry, type Registered } from '../../src/broker/history/registry.js';
import type { HistoryEntry } from '../../src/broker/history/journal.js';
import { Task } from '../../src/broker/task/task.js';
import { TASK_STATES, type TaskPageQuery, type TaskSnapshot, type TaskState } from '../../src/model/task.js';

const FINISHED: TaskState[] = ['succeeded', 'failed', 'cancelled', 'interrupted'];
const LIVE: TaskState[] = ['queued', 'running', 'retrying'];

/** A small deterministic PRNG (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function snapshot(id: string, createdAt: string, state: TaskState): TaskSnapshot {
  return {
    id,
    label: id,
    state,
    command: 'node',
    args: [],
    cwd: '/tmp',
    attempt: 1,
    maxAttempts: 1,
    createdAt,
    counters: { malformed: 0, rejected: 0, ignored: 0 },
  };
}

function entry(s: TaskSnapshot): HistoryEntry {
  return { snapshot: s, spec: { command: s.command, args: s.args, cwd: s.cwd, label: s.label } };
}

/** What a page is by definition: every task (live over history), filtered, sorted newest first, cut at the cursor. */
function reference(
  registry: TaskRegistry<Registered>,
  every: TaskSnapshot[],
  query: TaskPageQuery,
): { ids: string[]; total: number; more: boolean } {
  const limit = query.limit ?? 200;
  const states = query.state === undefined ? undefined : new Set(Array.isArray(query.state) ? query.state : [query.state]);
  const rows = every
    .filter((t) => !states || states.has(t.state))
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  let start = 0;
  if (query.before !== undefined) {
    const known = registry.get(query.before);
    const at = query.before.indexOf('~');
    const key = known ? [known.createdAt, known.id] : at > 0 ? [query.before.slice(0, at), query.before.slice(at + 1)] : undefined;
    if (key) {
      start = rows.findIndex((t) => t.createdAt < key[0]! || (t.createdAt === key[0] && t.id < key[1]!));
      if (start < 0) start = rows.length;
    }
  }
  return { ids: rows.slice(start, start + limit).map((t) => t.id), total: rows.length, more: start + limit < rows.length };
}

/** Every page of `query`, following the cursors, each checked against the reference. */
function checkPages(registry: TaskRegistry<Registered>, query: TaskPageQuery): string[] {
  const seen: string[] = [];
  const every = registry.tasks();
  let before = query.before;
  for (let guard = 0; guard < 1000; guard++) {
    const q = { ...query, ...(before !== undefined ? { before } : {}) };
    const page = registry.page(q);
    const want = reference(registry, every, q);
    expect(page.tasks.map((t) => t.id)).toEqual(want.ids);
    expect(page.total).toBe(want.total);
    expect(page.next !== undefined).toBe(want.more);
    seen.push(...page.tasks.map((t) => t.id));
    if (!page.next) return seen;
    before = page.next;
  }
  throw new Error('pages never ended');
}

function liveTask(s: TaskSnapshot): Registered {
  return { task: Task.fromSnapshot(s, () => {}) };
}

describe('pages walk history from its newest end', () => {
  test('random histories: ties in creation time, out-of-order finishes, removals, replacements, live tasks, filters and cursors', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const rand = random(seed);
      const registry = new TaskRegistry<Registered>();
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
      // Few distinct times, so many tasks share a creation time (the id breaks the tie).
      const times = Array.from({ length: 40 }, (_, i) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString());
      const ids: string[] = [];
      for (let i = 0; i < 400; i++) {
        const id = `t${Math.floor(rand() * 1e9)
          .toString(36)
          .padStart(6, '0')}-${i}`;
        ids.push(id);
        // Added in random order: a task created early that finished late goes in after newer ones.
        const s = snapshot(id, pick(times), pick(FINISHED));
        if (rand() < 0.1) registry.live.set(id, liveTask({ ...s, state: pick([...LIVE, ...FINISHED]) }));
        else registry.history.set(id, entry(s));
      }
      for (let i = 0; i < 30; i++) registry.history.delete(pick(ids));
      // Replaced in place with another state (spool adoption), then set again.
      for (let i = 0; i < 10; i++) {
        const stored = registry.history.get(pick(ids));
        if (!stored) continue;
        stored.snapshot = { ...stored.snapshot, state: pick(FINISHED) };
        registry.history.set(stored.snapshot.id, stored);
      }
      // A live task that is also still in history (listed once, as live).
      const both = [...registry.history.values()][3]!.snapshot;
      registry.live.set(both.id, liveTask({ ...both, state: 'running' }));

      const all = checkPages(registry, { limit: 37 });
      expect(new Set(all).size).toBe(all.length);
      expect(all.length).toBe(registry.tasks().length);
      checkPages(registry, {});
      checkPages(registry, { limit: 1 });
      for (const state of TASK_STATES) checkPages(registry, { state, limit: 9 });
      checkPages(registry, { state: LIVE, limit: 1000 });
      checkPages(registry, { state: ['failed', 'running'], limit: 13 });
      // A task id as the cursor, and a cursor of a task no longer there.
      checkPages(registry, { before: pick(all), limit: 25 });
      checkPages(registry, { before: `${times[20]}~t0000zz`, limit: 25 });
      checkPages(registry, { before: 'not a cursor', limit: 50 });

      // Stats count history by state without walking it: the same as counting every task.
      const stats = registry.stats(false);
      const counted = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0, paused: false };
      for (const t of registry.tasks()) counted[t.state === 'retrying' ? 'running' : t.state] += 1;
      expect(stats).toEqual(counted);
    }
  });

  test('the newest page of a long history walks only the newest end', () => {
    const registry = new TaskRegistry<Registered>();
    const start = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 20_000; i++) {
      const id = `id-${String(i).padStart(6, '0')}`;
      registry.history.set(id, entry(snapshot(id, new Date(start + i * 1000).toISOString(), 'succeeded')));
    }
    // Counting the snapshots the page reads: its rows, plus the one that says there is a next page.
    let reads = 0;
    for (const stored of registry.history.values()) {
      const s = stored.snapshot;
      Object.defineProperty(stored, 'snapshot', {
        get: () => {
          reads += 1;
          return s;
        },
      });
    }
    const page = registry.page({ limit: 50 });
    expect(page.tasks).toHaveLength(50);
    expect(page.total).toBe(20_000);
    expect(page.next).toBeDefined();
    // Binary search and the walk: a few hundred reads at most, not 20,000.
    expect(reads).toBeLessThan(500);
    reads = 0;
    // No live state in history: the live-only page the panel asks for first reads none of it.
    expect(registry.page({ state: LIVE, limit: 1000 }).tasks).toEqual([]);
    expect(reads).toBe(0);
  });
});
