/**
 * Every task the broker knows: live ones (in memory, with their Task) and finished ones read back
 * from history. Answers the queries (`tasks`, `get`, `result`, `logOf`, `attachment`, `stats`),
 * finds the spec to run again, and keeps memory bounded by the history limit.
 */
import { withoutContent, type FinalPayload } from '../../protocol/index.js';
import { BrokerError } from '../errors.js';
import type { Task } from '../task/task.js';
import {
  MAX_TASK_PAGE_SIZE,
  TASK_PAGE_SIZE,
  TASK_STATES,
  type CommandLine,
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
import type { HistoryEntry, RetrySpec } from './journal.js';
import { withSummary, type ResultFile, type ResultStore } from './results.js';
import { compareKeys, OrderedHistory, type SortKey } from './ordered-history.js';
import { Rollup } from './rollup.js';
import type { ConnectionTally } from '../transport/connection-tally.js';

export interface BrokerStats {
  /** What this process's task endpoints refused or failed to accept (see transport/connection-tally.ts). */
  connections?: ConnectionTally;
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

/** A page cursor: the sort key of the last task of the page, opaque to callers. */
function cursorOf(key: SortKey): string {
  return `${key[0]}~${key[1]}`;
}

function parseCursor(cursor: string): SortKey | undefined {
  const at = cursor.indexOf('~');
  return at > 0 ? [cursor.slice(0, at), cursor.slice(at + 1)] : undefined;
}

function taskKey(task: Task): SortKey {
  return [task.createdAt, task.id];
}

export class TaskRegistry<Live extends Registered> {
  readonly live = new Map<string, Live>();
  /** Finished tasks read back or retired, by id and in list order (see OrderedHistory). */
  readonly history = new OrderedHistory();
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
   * One page of tasks, newest first (see TaskPageQuery). The live tasks (few) are sorted; history is
   * walked from the newest end (or from the cursor) in the order it is kept, filtered as it goes: the
   * newest page costs the same however long the history is, and only the page's snapshots are copied.
   */
  page(query: TaskPageQuery = {}): TaskPage {
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? TASK_PAGE_SIZE)), MAX_TASK_PAGE_SIZE);
    const states = query.state === undefined ? undefined : new Set(Array.isArray(query.state) ? query.state : [query.state]);
    const matches = (state: TaskState): boolean => !states || states.has(state);
    const before = query.before === undefined ? undefined : (this.#keyOf(query.before) ?? parseCursor(query.before));

    const live: Live[] = [];
    let shadowed = 0; // history entries of live ids that match: listed as live, not twice
    for (const entry of this.live.values()) {
      const shadow = this.history.get(entry.task.id);
      if (shadow && matches(shadow.snapshot.state)) shadowed += 1;
      if (matches(entry.task.state) && (!before || compareKeys(taskKey(entry.task), before) < 0)) live.push(entry);
    }
    live.sort((a, b) => compareKeys(taskKey(b.task), taskKey(a.task)));
    let inHistory = states ? 0 : this.history.size;
    if (states) for (const state of states) inHistory += this.history.count(state);
    const total = inHistory - shadowed + this.#countLive(matches);

    // The newest history entry below the cursor that matches; none left once every match was passed.
    let at = (before ? this.history.lowerBound(before) : this.history.size) - 1;
    let unseen = before ? Number.POSITIVE_INFINITY : inHistory;
    const nextFromHistory = (): HistoryEntry | undefined => {
      for (; at >= 0 && unseen > 0; at--) {
        const entry = this.history.at(at)!;
        if (!matches(entry.snapshot.state)) continue;
        unseen -= 1;
        if (!this.live.has(entry.snapshot.id)) return entry;
      }
      return undefined;
    };
    const tasks: TaskSnapshot[] = [];
    let last: SortKey | undefined;
    let fromLive = 0;
    let stored = nextFromHistory();
    at -= 1;
    while (tasks.length < limit) {
      const candidate = live[fromLive];
      if (candidate && (!stored || compareKeys(taskKey(candidate.task), [stored.snapshot.createdAt, stored.snapshot.id]) > 0)) {
        tasks.push(liveSnapshot(candidate));
        last = taskKey(candidate.task);
        fromLive += 1;
      } else if (stored) {
        tasks.push(structuredClone(stored.snapshot));
        last = [stored.snapshot.createdAt, stored.snapshot.id];
        stored = nextFromHistory();
        at -= 1;
      } else {
        break;
      }
    }
    const page: TaskPage = { tasks, total };
    if (last && (fromLive < live.length || stored)) page.next = cursorOf(last);
    return page;
  }

  /**
   * What the newest `scan` tasks ran (live and from history, newest first), read in place: nothing
   * is copied. For `info()`'s recent commands, asked at every panel open: copying the snapshots of
   * five pages for it was most of a busy hub's garbage (docs/performance.md).
   */
  *newestCommandLines(scan: number): Generator<CommandLine> {
    const live = [...this.live.values()].sort((a, b) => compareKeys(taskKey(b.task), taskKey(a.task)));
    let at = this.history.size - 1;
    let fromLive = 0;
    for (let seen = 0; seen < scan; seen++) {
      // A live task's history entry (a retry's earlier run) is listed once, as live.
      while (at >= 0 && this.live.has(this.history.at(at)!.snapshot.id)) at -= 1;
      const stored = at >= 0 ? this.history.at(at)!.snapshot : undefined;
      const candidate = live[fromLive];
      if (candidate && (!stored || compareKeys(taskKey(candidate.task), [stored.createdAt, stored.id]) > 0)) {
        const { task } = candidate;
        fromLive += 1;
        yield { command: task.spec.command, args: task.spec.args ?? [], cwd: task.cwd, label: task.label };
      } else if (stored) {
        at -= 1;
        yield stored;
      } else {
        return;
      }
    }
  }

  /** The sort key of a task this registry knows, live or in history. */
  #keyOf(id: string): SortKey | undefined {
    const live = this.live.get(id);
    if (live) return taskKey(live.task);
    const stored = this.history.get(id);
    return stored ? [stored.snapshot.createdAt, stored.snapshot.id] : undefined;
  }

  #countLive(matches: (state: TaskState) => boolean): number {
    let n = 0;
    for (const entry of this.live.values()) if (matches(entry.task.state)) n += 1;
    return n;
  }

  /**
   * A finished live task leaves memory for history: its Task (which holds the whole result, also in
   * its settled promise) is dropped; the snapshot stays, with its log, its attachments' content and
   * what a Retry needs beyond the stored spec (`retry`).
   */
  retire(id: string, spec: HistoryEntry['spec'], attachments?: Map<string, string | Uint8Array>, retry?: RetrySpec): void {
    const live = this.live.get(id);
    if (!live || !live.task.finished || live.attempt) return;
    const retired: NonNullable<HistoryEntry['retired']> = { log: live.task.logLines() };
    if (attachments && attachments.size > 0) retired.attachments = attachments;
    if (retry) retired.retry = retry;
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

  /**
   * The whole final payload of a task (attachments as headers), also when its snapshot carries only
   * a summary: read from `results` then. `null` when the task has no result (yet, or the file is
   * gone); undefined for an unknown task.
   */
  result(id: string, results: ResultStore | undefined): FinalPayload | null | undefined {
    const live = this.live.get(id);
    if (live) return live.task.final ? withoutContent(live.task.final) : null;
    const stored = this.history.get(id);
    if (!stored) return undefined;
    if (stored.snapshot.resultSummary) return results?.read(id) ?? null;
    return stored.snapshot.result ? structuredClone(stored.snapshot.result) : null;
  }

  /**
   * The file of a task's whole result, opened to be sent as it is, when `result` would read it from
   * disk: null when that file is missing or refused (`result` is null then too); undefined when the
   * result is not on disk (a live task, a small result, an unknown task).
   */
  resultFile(id: string, results: ResultStore | undefined): ResultFile | null | undefined {
    if (this.live.has(id) || !results) return undefined;
    if (!this.history.get(id)?.snapshot.resultSummary) return undefined;
    return results.open(id) ?? null;
  }

  /** An attachment of a final payload, while the task is in memory (live, or retired); not in history read back. */
  attachment(id: string, name: string): string | Uint8Array | undefined {
    const live = this.live.get(id);
    if (live) return live.task.attachment(name);
    return this.history.get(id)?.retired?.attachments?.get(name);
  }

  /** Tasks by state: live ones counted one by one, history by its counts (not copied, not walked). */
  stats(paused: boolean): BrokerStats {
    const stats: BrokerStats = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0, paused };
    const add = (state: TaskState, n: number): void => {
      if (isActive(state)) stats.running += n;
      else stats[state as Exclude<TaskState, 'running' | 'retrying'>] += n;
    };
    for (const state of TASK_STATES) add(state, this.history.count(state));
    for (const entry of this.live.values()) {
      const shadow = this.history.get(entry.task.id);
      if (shadow) add(shadow.snapshot.state, -1);
      add(entry.task.state, 1);
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
    if (stored.snapshot.recovering)
      throw new BrokerError('not_retryable', `Task ${id} is still running (its agent outlived the hub's restart); cancel it first.`);
    const { label, retries, ...rest } = stored.spec;
    return { ...rest, label, ...(retries !== undefined ? { retries } : {}), ...stored.retired?.retry };
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
    // Counted, not copied: this runs at every task's end, with every queued task in `live` (1,000 submitted at once).
    let finished = 0;
    for (const entry of this.live.values()) if (evictable(entry)) finished += 1;
    const excess = finished + this.history.size - limit;
    const expired: string[] = [];
    if (maxAgeMs) for (const entry of this.history.values()) if (tooOld(entry.snapshot, maxAgeMs, now)) expired.push(entry.snapshot.id);
    if (excess <= 0 && expired.length === 0) return [];
    // The first `excess` ids in history's insertion order, without copying every key of a long history.
    const first: string[] = [];
    for (const id of this.history.keys()) {
      if (first.length >= Math.min(excess, this.history.size)) break;
      first.push(id);
    }
    const historic = [...new Set(first.concat(expired))];
    const fromLive: string[] = [];
    const fromLiveCount = Math.max(0, excess - historic.length);
    for (const entry of this.live.values()) {
      if (fromLive.length >= fromLiveCount) break;
      if (evictable(entry)) fromLive.push(entry.task.id);
    }
    const leaving = historic.map((id) => this.history.get(id)!.snapshot).concat(fromLive.map((id) => liveSnapshot(this.live.get(id)!)));
    this.rollup.fold(leaving, { soon: true });
    for (const id of historic) this.history.delete(id);
    for (const id of fromLive) this.live.delete(id);
    return [...historic, ...fromLive];
  }
}

/** A live task that may leave memory for history: finished, its processes gone. */
function evictable(entry: Registered): boolean {
  return entry.task.finished && !entry.attempt;
}

/** A live task's snapshot, with its result replaced by the summary when the result is on disk. */
function liveSnapshot(entry: Registered): TaskSnapshot {
  const snapshot = entry.task.snapshot();
  return entry.resultSummary ? withSummary(snapshot, entry.resultSummary) : snapshot;
}
