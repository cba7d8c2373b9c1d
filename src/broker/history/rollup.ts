/**
 * The aggregates of tasks that left history (retention by count or age): hourly buckets without
 * ids, in `insights-rollup.json` beside the journal, so insights survive journal compaction.
 *
 * A task is folded in exactly once. Evicted tasks stay in the journal file until the next start
 * compacts it, so their ids are kept as `pending` until then: a start that finds them in the journal
 * again skips them, and a crash between writing this file and compacting the journal counts nothing
 * twice. Writes are atomic (write, rename); a failure is reported by the caller and never stops tasks.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Insights, InsightsQuery } from '../../model/insights.js';
import type { TaskSnapshot } from '../../model/task.js';
import { silentLogger } from '../log.js';
import { computeInsights, foldTasks, mergeBuckets, type Bucket } from './insights.js';
import { Journal } from './journal.js';

export const ROLLUP_FILE = 'insights-rollup.json';
/** How long evictions at run time gather before the file is written (see fold). */
const SAVE_DELAY_MS = 1000;

interface RollupFile {
  version: 1;
  buckets: Bucket[];
  pending: string[];
  archived: number;
}

export class Rollup {
  private buckets = new Map<string, Bucket>();
  private pending = new Set<string>();
  private file: string | undefined;
  /** How many tasks are folded in. */
  archived = 0;
  /** Why the file could not be written, if it could not (the aggregates stay in memory). */
  error: string | undefined;
  private saveTimer: NodeJS.Timeout | undefined;

  /** Reads the rollup of the history in `dir` (missing or unreadable: empty) and writes there from now on. */
  open(dir: string): void {
    this.load(dir);
    this.file = path.join(dir, ROLLUP_FILE);
  }

  /** Reads the rollup of the history in `dir` (missing or unreadable: empty); writes nothing. */
  load(dir: string): void {
    let saved: RollupFile;
    try {
      saved = JSON.parse(readFileSync(path.join(dir, ROLLUP_FILE), 'utf8')) as RollupFile;
      if (saved.version !== 1 || !Array.isArray(saved.buckets)) return;
    } catch {
      return;
    }
    this.buckets = mergeBuckets(saved.buckets, new Map());
    this.pending = new Set(saved.pending);
    this.archived = saved.archived;
  }

  /**
   * Folds tasks that leave history (each once); returns how many were new. The file is written at
   * once, or with `{ soon: true }` within SAVE_DELAY_MS together with other evictions: while the
   * journal is not compacted it still holds those tasks, so a crash before the write loses nothing
   * (the next start folds them from the journal). Only a compaction needs the file on disk first.
   */
  fold(tasks: readonly TaskSnapshot[], { soon = false } = {}): number {
    const fresh = tasks.filter((task) => !this.pending.has(task.id));
    foldTasks(fresh, this.buckets, false);
    for (const task of tasks) this.pending.add(task.id);
    this.archived += fresh.length;
    if (tasks.length > 0) {
      if (soon) this.saveSoon();
      else this.save();
    }
    return fresh.length;
  }

  /** The journal no longer holds the pending tasks: forget their ids. */
  compacted(): void {
    if (this.pending.size === 0) return;
    this.pending.clear();
    this.save();
  }

  /** Writes a deferred save now (the broker is closing). */
  flush(): void {
    if (this.saveTimer) this.save();
  }

  /**
   * Every eviction used to rewrite the file, whose `pending` ids grow until the next compaction: with
   * 1,000 tasks through a 100-task history that was a 40 KB write and a rename per task.
   */
  private saveSoon(): void {
    if (!this.file || this.saveTimer) return;
    this.saveTimer = setTimeout(() => this.save(), SAVE_DELAY_MS);
    this.saveTimer.unref();
  }

  /** True when the task is already folded in (it left history but may still be in the journal file). */
  counts(id: string): boolean {
    return this.pending.has(id);
  }

  all(): Bucket[] {
    return [...this.buckets.values()];
  }

  private save(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (!this.file) return;
    const data: RollupFile = { version: 1, buckets: this.all(), pending: [...this.pending], archived: this.archived };
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
      renameSync(tmp, this.file);
      this.error = undefined;
    } catch (error) {
      this.error = `insights rollup ${this.file} cannot be written: ${(error as Error).message}`;
    }
  }
}

/**
 * Insights of the history in `dir` without a broker (`backchannel stats`): reads the journal and the
 * rollup, writes nothing. Tasks the rollup already counts (pending compaction) are not counted twice.
 */
export function readInsights(dir: string, query: InsightsQuery): Insights {
  const rollup = new Rollup();
  rollup.load(dir);
  const { entries } = new Journal(dir, silentLogger).load();
  const buckets = foldTasks(entries.map((entry) => entry.snapshot).filter((task) => !rollup.counts(task.id)));
  for (const bucket of rollup.all()) buckets.set(`rollup:${buckets.size}`, bucket);
  return computeInsights(buckets.values(), query, rollup.archived);
}
