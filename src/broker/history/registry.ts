/**
 * Every task the broker knows: live ones (in memory, with their Task) and finished ones read back
 * from history. Answers the queries (`tasks`, `get`, `stats`), finds the spec to run again, and keeps
 * memory bounded by the history limit.
 */
import { BrokerError } from '../errors.js';
import type { Task } from '../task/task.js';
import type { TaskSnapshot, TaskSpec } from '../../model/task.js';
import type { Insights, InsightsQuery } from '../../model/insights.js';
import { computeInsights, foldTasks } from './insights.js';
import type { HistoryEntry } from './journal.js';
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
    for (const entry of this.live.values()) all.push(entry.task.snapshot());
    return all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  }

  get(id: string): TaskSnapshot | undefined {
    const live = this.live.get(id);
    if (live) return live.task.snapshot();
    const stored = this.history.get(id);
    return stored ? structuredClone(stored.snapshot) : undefined;
  }

  stats(paused: boolean): BrokerStats {
    const stats: BrokerStats = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0, paused };
    for (const snapshot of this.tasks()) {
      if (snapshot.state === 'retrying') stats.running += 1;
      else stats[snapshot.state] += 1;
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
    for (const entry of this.live.values()) if (entry.task.finished) finished.push(entry.task.snapshot());
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
    const leaving = historic.map((id) => this.history.get(id)!.snapshot).concat(fromLive.map((id) => this.live.get(id)!.task.snapshot()));
    this.rollup.fold(leaving, { soon: true });
    for (const id of historic) this.history.delete(id);
    for (const id of fromLive) this.live.delete(id);
    return [...historic, ...fromLive];
  }
}
