/**
 * The finished tasks of history by id — a Map, in insertion order as before — that also keeps them
 * in list order (creation time, then id) and counts them by state, so a page of the newest tasks
 * walks from the newest end instead of filtering and sorting the whole history (the first page went
 * from 13.6 to 64 ms between 10,000 and 100,000 tasks: docs/performance.md § How cost grows with
 * history).
 *
 * Inserts are at the end in the usual case (a task created after every other one); a task that
 * finishes after newer ones goes to its place by binary search. Replacing an entry (`set` of a known
 * id, as spool adoption does after changing it in place) recounts the states when next asked.
 */
import type { TaskState } from '../../model/task.js';
import type { HistoryEntry } from './journal.js';

/** Where a task sorts: by creation time, then id (the order of `tasks()`). */
export type SortKey = readonly [createdAt: string, id: string];

export function compareKeys(a: SortKey, b: SortKey): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

function keyOf(entry: HistoryEntry): SortKey {
  return [entry.snapshot.createdAt, entry.snapshot.id];
}

export class OrderedHistory extends Map<string, HistoryEntry> {
  /** Every entry, oldest first by SortKey. */
  #sorted: HistoryEntry[] = [];
  /** Entries per state; undefined when an entry was replaced (recounted when next asked). */
  #counts: Map<TaskState, number> | undefined = new Map();

  override set(id: string, entry: HistoryEntry): this {
    const old = super.get(id);
    super.set(id, entry);
    if (old) {
      this.#remove(old);
      this.#counts = undefined;
    } else if (this.#counts) {
      const state = entry.snapshot.state;
      this.#counts.set(state, (this.#counts.get(state) ?? 0) + 1);
    }
    this.#insert(entry);
    return this;
  }

  override delete(id: string): boolean {
    const old = super.get(id);
    if (!old) return false;
    super.delete(id);
    this.#remove(old);
    if (this.#counts) {
      const state = old.snapshot.state;
      this.#counts.set(state, (this.#counts.get(state) ?? 1) - 1);
    }
    return true;
  }

  override clear(): void {
    super.clear();
    this.#sorted = [];
    this.#counts = new Map();
  }

  /** How many entries are in `state` now. */
  count(state: TaskState): number {
    if (!this.#counts) {
      const counts = new Map<TaskState, number>();
      for (const entry of this.#sorted) counts.set(entry.snapshot.state, (counts.get(entry.snapshot.state) ?? 0) + 1);
      this.#counts = counts;
    }
    return this.#counts.get(state) ?? 0;
  }

  /** The entry at `index` in list order (0: the oldest); undefined out of range. */
  at(index: number): HistoryEntry | undefined {
    return this.#sorted[index];
  }

  /** The index of the first entry that sorts at or after `key` (`size` when none does). */
  lowerBound(key: SortKey): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(keyOf(this.#sorted[mid]!), key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #insert(entry: HistoryEntry): void {
    const sorted = this.#sorted;
    const last = sorted.at(-1);
    if (!last || compareKeys(keyOf(last), keyOf(entry)) < 0) sorted.push(entry);
    else sorted.splice(this.lowerBound(keyOf(entry)), 0, entry);
  }

  #remove(entry: HistoryEntry): void {
    const sorted = this.#sorted;
    let at = this.lowerBound(keyOf(entry));
    // The same object is at its key; a caller that changed the key in place is found the slow way.
    if (sorted[at] !== entry) at = sorted.indexOf(entry);
    if (at >= 0) sorted.splice(at, 1);
  }
}
