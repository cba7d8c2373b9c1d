/**
 * Every task the broker knows: live ones (in memory, with their Task) and finished ones read back
 * from history. Answers the queries (`tasks`, `get`, `stats`), finds the spec to run again, and keeps
 * memory bounded by the history limit.
 */
import { BrokerError } from '../errors.js';
import type { Task } from '../task/task.js';
import {
  MAX_TASK_PAGE_SIZE,
  TASK_PAGE_SIZE,
  type LogLine,
  type ResultSummary,
  type TaskPage,
  type TaskPageQuery,
  type TaskSnapshot,
  type TaskSpec,
  type TaskState,
} from '../../model/task.js';
import type { Insights, InsightsQuery } from '../../model/insights.js';
import { isActive } from '../../model/states.js';
import { computeInsights, foldTasks } from './insights.js';
import type { HistoryEntry } from './journal.js';
import { withSummary } from './results.js';
import { Rollup } from './rollup.js';

export interface BrokerStats {
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  interrupted: number;
  paused: boolean;
}

/** How much finished history is kept: at most `limit` tasks, none that ended more than `maxAgeMs` ago. */
export interface Retention {
  limit: number;
  maxAgeMs?: number;
}

/** True when a finished task ended too long ago to be kept. */
export function tooOld(snapshot: TaskSnapshot, maxAgeMs: number | undefined, now = Date.now()): boolean {
  if (!maxAgeMs) return false;
  const ended = Date.parse(snapshot.endedAt ?? snapshot.createdAt);
  return Number.isFinite(ended) && now - ended > maxAgeMs;
}

/** What the registry needs of a live task: its record, and whether an attempt still runs. */
export interface Registered {
  task: Task;
  attempt?: unknown;
  /** Set when its final payload went to disk: snapshots carry this instead of the result. */
  resultSummary?: ResultSummary;
}

/** Where a task sorts: by creation time, then id (the order of `tasks()`). */
type SortKey = readonly [createdAt: string, id: string];

function compareKeys(a: SortKey, b: SortKey): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/** A page cursor: the sort key of the last task of the page, opaque to callers. */
function cursorOf(key: SortKey): string {
  return `${key[0]}~${key[1]}`;
}

function parseCursor(cursor: string): SortKey | undefined {
  const at = cursor.indexOf('~');
  return at > 0 ? [cursor.slice(0, at), cursor.slice(at + 1)] : undefined;
}

export class TaskRegistry<Live extends Registered> {
  readonly live = new Map<string, Live>();
  readonly history = new Map<string, HistoryEntry>();
  /** Aggregates of the tasks that left history. */
  readonly rollup = new Rollup();

  /** Every task, live and from history, oldest first. */
  tasks(): TaskSnapshot[] {
    const all: TaskSnapshot[] = [];
    for (const entry of this.history.values()) if (!this.live.has(entry.snapshot.id)) all.push(structuredClone(entry.snapshot));
    for (const entry of this.live.values()) all.push(liveSnapshot(entry));
    return all.sort((a, b) => compareKeys([a.createdAt, a.id], [b.createdAt, b.id]));
  }

  get(id: string): TaskSnapshot | undefined {
    const live = this.live.get(id);
    if (live) return liveSnapshot(live);
    const stored = this.history.get(id);
    return stored ? structuredClone(stored.snapshot) : undefined;
  }

  /**
   * One page of tasks, newest first (see TaskPageQuery). Only the page's snapshots are copied, so a
   * page costs the same however long the history is.
   */
  page(query: TaskPageQuery = {}): TaskPage {
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? TASK_PAGE_SIZE)), MAX_TASK_PAGE_SIZE);
    const states = query.state === undefined ? undefined : new Set(Array.isArray(query.state) ? query.state : [query.state]);
    const rows: { key: SortKey; snapshot: () => TaskSnapshot }[] = [];
    for (const entry of this.history.values()) {
      const s = entry.snapshot;
      if (this.live.has(s.id) || (states && !states.has(s.state))) continue;
      rows.push({ key: [s.createdAt, s.id], snapshot: () => structuredClone(s) });
    }
    for (const entry of this.live.values()) {
      const { task } = entry;
      if (states && !states.has(task.state)) continue;
      rows.push({ key: [task.createdAt, task.id], snapshot: () => liveSnapshot(entry) });
    }
    rows.sort((a, b) => compareKeys(b.key, a.key));
    let start = 0;
    if (query.before !== undefined) {
      const known = this.get(query.before);
      const before: SortKey | undefined = known ? [known.createdAt, known.id] : parseCursor(query.before);
      if (before) {
        start = rows.findIndex((row) => compareKeys(row.key, before) < 0);
        if (start < 0) start = rows.length;
      }
    }
    const slice = rows.slice(start, start + limit);
    const page: TaskPage = { tasks: slice.map((row) => row.snapshot()), total: rows.length };
    const last = slice.at(-1);
    if (last && start + limit < rows.length) page.next = cursorOf(last.key);
    return page;
  }

  /**
   * A finished live task leaves memory for history early: its Task (which holds the whole result,
   * also in its settled promise) is dropped, the summary snapshot stays, with its log.
   */
  retire(id: string, spec: HistoryEntry['spec'], attachments?: Map<string, string | Uint8Array>): void {
    const live = this.live.get(id);
    if (!live || !live.task.finished || live.attempt) return;
    const retired: HistoryEntry['retired'] = { log: live.task.logLines() };
    if (attachments && attachments.size > 0) retired.attachments = attachments;
    this.history.delete(id);
    this.history.set(id, { snapshot: liveSnapshot(live), spec, retired });
    this.live.delete(id);
  }

  /** The log of a task in memory: live, or retired (see `retire`). */
  logOf(id: string): LogLine[] {
    const live = this.live.get(id);
    if (live) return live.task.logLines();
    return this.history.get(id)?.retired?.log.slice() ?? [];
  }

  stats(paused: boolean): BrokerStats {
    const stats: BrokerStats = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0, paused };
    for (const snapshot of this.tasks()) {
      if (isActive(snapshot.state)) stats.running += 1;
      else stats[snapshot.state as Exclude<TaskState, 'running' | 'retrying'>] += 1;
    }
    return stats;
  }

  /** The spec to run a finished task again with. */
  specToRetry(id: string): TaskSpec {
    const live = this.live.get(id);
    if (live) {
      if (!live.task.finished) throw new BrokerError('not_retryable', `Task ${id} is still ${live.task.state}; cancel it first.`);
      const { signal: _signal, ...spec } = live.task.spec;
      return spec;
    }
    const stored = this.history.get(id);
    if (!stored) throw new BrokerError('unknown_task', `No task with id ${id}.`);
    const { label, retries, ...rest } = stored.spec;
    return { ...rest, label, ...(retries !== undefined ? { retries } : {}) };
  }

  /** Insights of every finished task: those in memory, and the rollup of those that left. */
  insights(query: InsightsQuery): Insights {
    const finished = [...this.history.values()].filter((e) => !this.live.has(e.snapshot.id)).map((e) => e.snapshot);
    for (const entry of this.live.values()) if (entry.task.finished) finished.push(liveSnapshot(entry));
    const buckets = foldTasks(finished);
    for (const bucket of this.rollup.all()) buckets.set(`rollup:${buckets.size}`, bucket);
    return computeInsights(buckets.values(), query, this.rollup.archived);
  }

  /**
   * Keeps memory bounded: finished tasks beyond `limit`, or older than `maxAgeMs`, move out (oldest
   * first) and into the rollup. Returns their ids.
   */
  evictOldFinished({ limit, maxAgeMs }: Retention, now = Date.now()): string[] {
    const finished = [...this.live.values()].filter((e) => e.task.finished && !e.attempt);
    const excess = finished.length + this.history.size - limit;
    const expired = [...this.history.values()].filter((e) => tooOld(e.snapshot, maxAgeMs, now)).map((e) => e.snapshot.id);
    if (excess <= 0 && expired.length === 0) return [];
    const historic = [...new Set([...this.history.keys()].slice(0, Math.max(0, Math.min(excess, this.history.size))).concat(expired))];
    const fromLive = finished.slice(0, Math.max(0, excess - historic.length)).map((entry) => entry.task.id);
    const leaving = historic.map((id) => this.history.get(id)!.snapshot).concat(fromLive.map((id) => liveSnapshot(this.live.get(id)!)));
    this.rollup.fold(leaving, { soon: true });
    for (const id of historic) this.history.delete(id);
    for (const id of fromLive) this.live.delete(id);
    return [...historic, ...fromLive];
  }
}

/** A live task's snapshot, with its result replaced by the summary when the result is on disk. */
function liveSnapshot(entry: Registered): TaskSnapshot {
  const snapshot = entry.task.snapshot();
  return entry.resultSummary ? withSummary(snapshot, entry.resultSummary) : snapshot;
}
