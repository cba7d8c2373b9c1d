/**
 * Coalesces a chatty broker into bridge events: the broker emits an update for every line an agent
 * sends; subscribers get at most one `BridgeEvent` per `flushIntervalMs` (a frame by default),
 * carrying each changed task once, the ids of tasks that left history, and the paused flag and the
 * counts by state when they changed. A new subscriber's first event is the full picture: every live
 * task and the newest page of all, with the cursor of the older ones — bounded however long the
 * history is (over 100,000 tasks it was ~60 MB built for each panel, which never painted:
 * docs/performance.md § How cost grows with history).
 *
 * Forward at once when idle, coalesce only under pressure: a change on a quiet broker goes out on
 * the next turn of the event loop. Under pressure — a flush ran late plus took, together, longer than
 * `flushIntervalMs` (the broker's event loop is saturated, or the listeners are slow) — flushes are
 * spaced by `busyFlushIntervalMs` instead, until one is quick and on time again.
 */
import type { BridgeEvent, TaskCounts } from '../bridge/contract.js';
import { systemClock, type Clock } from '../model/clock.js';
import { MAX_TASK_PAGE_SIZE, TASK_PAGE_SIZE, type TaskPage, type TaskPageQuery, type TaskSnapshot, type TaskState } from '../model/task.js';

/** What the coalescer reads from the broker when it flushes. */
export interface CoalescerSource {
  /** Every task: the first picture of a source that cannot page. */
  tasks(): TaskSnapshot[];
  get(id: string): TaskSnapshot | undefined;
  /** Pages of tasks, newest first: the first picture is then live tasks and the newest page. */
  taskPage?(query: TaskPageQuery): TaskPage;
  /** Tasks by state (live and history): sent with the events when they change. */
  stats?(): TaskCounts;
  readonly paused: boolean;
}

/** The states of tasks not finished: all of them are in the first picture. */
const LIVE_STATES: TaskState[] = ['running', 'retrying', 'queued'];

function sameCounts(a: TaskCounts | undefined, b: TaskCounts): boolean {
  return a !== undefined && (Object.keys(b) as (keyof TaskCounts)[]).every((key) => a[key] === b[key]);
}

export interface UpdateCoalescerOptions {
  /** Shortest time between two events. */
  flushIntervalMs: number;
  /** Time between two events while the host is under pressure. @default flushIntervalMs */
  busyFlushIntervalMs?: number;
  /** Called when a listener throws (the others still get the event). */
  onListenerError?: (error: unknown) => void;
  /** Where the flushes' time comes from (a test's fake clock). @default systemClock */
  clock?: Clock;
}

interface Subscriber {
  listener: (event: BridgeEvent) => void;
  /** Still owed the initial full picture. */
  needsFull: boolean;
}

export class UpdateCoalescer {
  readonly #source: CoalescerSource;
  readonly #options: UpdateCoalescerOptions;
  readonly #subscribers = new Set<Subscriber>();
  readonly #dirty = new Set<string>();
  readonly #removed = new Set<string>();
  #lastPaused: boolean;
  #pausedDirty = false;
  /** The counts last sent (undefined: the source has none). */
  #lastCounts: TaskCounts | undefined;
  /** Cancels the pending flush (undefined: none is pending). */
  #timer: (() => void) | undefined;
  #lastFlushAt = 0;
  /** When the pending flush is due (to measure how late it runs). */
  #dueAt = 0;
  #busy = false;
  #closed = false;
  readonly #clock: Clock;

  constructor(source: CoalescerSource, options: UpdateCoalescerOptions) {
    this.#source = source;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#lastPaused = source.paused;
  }

  get hasSubscribers(): boolean {
    return this.#subscribers.size > 0;
  }

  /** Adds a listener; its first event is the full picture. Returns the unsubscribe function. */
  subscribe(listener: (event: BridgeEvent) => void): () => void {
    if (this.#closed) return () => {};
    const subscriber: Subscriber = { listener, needsFull: true };
    this.#subscribers.add(subscriber);
    this.#schedule();
    return () => {
      this.#subscribers.delete(subscriber);
    };
  }

  /** A task changed. */
  taskChanged(taskId: string): void {
    if (!this.hasSubscribers) return;
    this.#dirty.add(taskId);
    this.#schedule();
  }

  /** Tasks left history (`tasks()`/`get()` no longer know them). */
  tasksRemoved(taskIds: readonly string[]): void {
    if (!this.hasSubscribers) return;
    for (const id of taskIds) {
      this.#dirty.delete(id);
      this.#removed.add(id);
    }
    this.#schedule();
  }

  /** Something not tied to a task may have changed (the paused flag); the flush notices what. */
  poke(): void {
    if (this.hasSubscribers) this.#schedule();
  }

  /** Cancels the pending flush and drops every subscriber. */
  close(): void {
    this.#closed = true;
    this.#timer?.();
    this.#timer = undefined;
    this.#subscribers.clear();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const now = this.#clock.now();
    this.#dueAt = now + Math.max(0, this.#lastFlushAt + this.#interval() - now);
    this.#arm(this.#dueAt - now);
  }

  #interval(): number {
    const { flushIntervalMs, busyFlushIntervalMs = flushIntervalMs } = this.#options;
    return this.#busy ? busyFlushIntervalMs : flushIntervalMs;
  }

  /**
   * Node's timers count from the event loop's cached clock, which lags `Date.now()` while a long
   * callback runs, so a timer can fire a few ms early: then it waits out the rest instead of flushing.
   */
  #arm(wait: number): void {
    this.#timer = this.#clock.after(wait, () => {
      const early = this.#lastFlushAt + this.#interval() - this.#clock.now();
      if (early > 0) this.#arm(early);
      else this.#flush();
    });
  }

  /** True while the host is under pressure: then events are spaced by `busyFlushIntervalMs`. */
  get busy(): boolean {
    return this.#busy;
  }

  #flush(): void {
    this.#timer = undefined;
    const startedAt = this.#clock.now();
    const late = startedAt - this.#dueAt;
    this.#deliverAll();
    // The next event is spaced from the end of this one's delivery, not its start: a delivery that
    // took long (slow listeners, or a host that took the CPU away meanwhile) must not be followed
    // by the next event less than an interval after its listeners got it.
    this.#lastFlushAt = this.#clock.now();
    this.#busy = late + (this.#lastFlushAt - startedAt) > this.#options.flushIntervalMs;
  }

  #deliverAll(): void {
    if (this.#source.paused !== this.#lastPaused) {
      this.#lastPaused = this.#source.paused;
      this.#pausedDirty = true;
    }
    const changed = this.#takeChanged();
    const removed = [...this.#removed];
    this.#removed.clear();
    const counts = this.#counts();
    const countsDirty = counts !== undefined && !sameCounts(this.#lastCounts, counts);
    if (counts) this.#lastCounts = counts;
    let picture: { tasks: TaskSnapshot[]; older?: string } | undefined;
    for (const subscriber of this.#subscribers) {
      let event: BridgeEvent;
      if (subscriber.needsFull) {
        subscriber.needsFull = false;
        picture ??= this.#picture();
        event = { tasks: picture.tasks, full: true, paused: this.#lastPaused };
        if (picture.older !== undefined) event.older = picture.older;
        if (counts) event.counts = counts;
      } else if (changed.length > 0 || removed.length > 0 || this.#pausedDirty || countsDirty) {
        event = { tasks: changed };
        if (removed.length > 0) event.removed = removed;
        if (this.#pausedDirty) event.paused = this.#lastPaused;
        if (countsDirty) event.counts = counts;
      } else {
        continue;
      }
      this.#deliver(subscriber, event);
    }
    this.#pausedDirty = false;
  }

  #counts(): TaskCounts | undefined {
    if (!this.#source.stats) return undefined;
    const { queued, running, succeeded, failed, cancelled, interrupted } = this.#source.stats();
    return { queued, running, succeeded, failed, cancelled, interrupted };
  }

  /**
   * The first picture: every live task and the newest TASK_PAGE_SIZE of all, with the cursor of
   * the older ones (`listTaskPage({ before: older })`); every task from a source that cannot page.
   */
  #picture(): { tasks: TaskSnapshot[]; older?: string } {
    if (!this.#source.taskPage) return { tasks: this.#source.tasks() };
    const byId = new Map<string, TaskSnapshot>();
    let before: string | undefined;
    do {
      const live = this.#source.taskPage({ state: LIVE_STATES, limit: MAX_TASK_PAGE_SIZE, ...(before !== undefined ? { before } : {}) });
      for (const task of live.tasks) byId.set(task.id, task);
      before = live.next;
    } while (before !== undefined);
    const newest = this.#source.taskPage({ limit: TASK_PAGE_SIZE });
    for (const task of newest.tasks) byId.set(task.id, task);
    return newest.next === undefined ? { tasks: [...byId.values()] } : { tasks: [...byId.values()], older: newest.next };
  }

  #takeChanged(): TaskSnapshot[] {
    const changed: TaskSnapshot[] = [];
    for (const id of this.#dirty) {
      const task = this.#source.get(id);
      if (task) changed.push(task);
    }
    this.#dirty.clear();
    return changed;
  }

  #deliver(subscriber: Subscriber, event: BridgeEvent): void {
    try {
      subscriber.listener(event);
    } catch (error) {
      this.#options.onListenerError?.(error);
    }
  }
}
