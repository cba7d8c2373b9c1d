/**
 * One task the broker holds in memory: its Task, its pending question and tool calls, the attempt running now,
 * what its kinds added to it (task-kinds.ts), and the once-only steps of its life the broker's queue
 * calls in order. It ends once (`end`): the question dropped, the task settled, a big result written
 * to its own file, the `ended` record fsynced — and `finished` resolves once no attempt is left. Its
 * kinds' prepare step fails the task when it throws; their capture step runs once, whichever of the
 * broker's paths (the last attempt's exit, or a task that never ran) comes first.
 */
import { isoNow, withoutContent } from '../protocol/index.js';
import { systemClock, type Clock } from '../model/clock.js';
import type { ResultSummary, RetryPolicy, TaskUpdate } from '../model/task.js';
import { backoffDelay } from './guards/retry.js';
import type { Journal, JournalRecord } from './history/journal.js';
import { progressRecord, retrySpec, storedSpec } from './history/records.js';
import type { Registered, TaskRegistry } from './history/registry.js';
import { withSummary, type ResultStore } from './history/results.js';
import type { RunningAttempt } from './queue/attempt-queue.js';
import { DEFAULTS } from './settings.js';
import { askContext, captureRuns, prepareRuns, type HeldTask, type KindStep, type TaskRun } from './task-kinds.js';
import { PendingQuestion } from './task/questions.js';
import { PendingToolCalls } from './task/tool-calls.js';
import type { Task } from './task/task.js';
import type { TaskHandle } from './types.js';

/** Where a task's history goes (both absent without a data directory). */
export interface TaskRecords {
  readonly journal: Journal | undefined;
  /** Big results of finished tasks, on disk beside the journal. */
  readonly results: ResultStore | undefined;
}

export class LiveTask implements Registered, HeldTask {
  readonly question: PendingQuestion;
  /** Its agent's calls to tools the caller hosts, waiting for the caller's answers. */
  readonly toolCalls: PendingToolCalls;
  /** Resolves when the task's processes are gone and its endpoints removed. */
  readonly finished: Promise<void>;
  readonly markFinished: () => void;
  attempt?: RunningAttempt | undefined;
  cancelRequested?: string;
  /** Set when the final payload went to disk (see ResultStore): snapshots carry this instead. */
  resultSummary?: ResultSummary;
  /** Resolves once the task's `queued` record is durable (see TaskHandle.accepted). */
  accepted: Promise<void> = Promise.resolve();
  /** Resolves once the task's ending is durable and shown (see `end`); until it ended, never. */
  published: Promise<void> = new Promise(() => {});
  private backoff: { cancel: () => void; wake: () => void } | undefined;
  /** A progress record was written less than an interval ago (see journalProgress). */
  private progressCooling = false;
  /** A partial came while cooling: its progress is written when the interval is over. */
  private progressPending = false;
  private cancelProgress: (() => void) | undefined;
  private captured = false;

  constructor(
    readonly task: Task,
    readonly policy: RetryPolicy,
    /** What the task's kinds add to it (planned at submit). */
    readonly runs: readonly TaskRun[],
    askTimeoutMs: number,
    private readonly records: TaskRecords,
    /** Where the wait between attempts and the interval between progress records take their time. */
    private readonly clock: Clock = systemClock,
  ) {
    this.question = new PendingQuestion(task, askTimeoutMs, () => askContext(runs));
    this.toolCalls = new PendingToolCalls(task);
    let markFinished!: () => void;
    this.finished = new Promise<void>((resolve) => (markFinished = resolve));
    this.markFinished = markFinished;
  }

  /**
   * Ends the task once: decides its ending, drops its question, records it durably, and shows it
   * (state, `ended` update, `result`) only once the `ended` record is fsynced (`published`).
   */
  end(settleTask: () => void): void {
    const { task, records } = this;
    if (task.decided) return;
    this.cancelProgress?.();
    this.question.drop();
    this.toolCalls.dropAll();
    task.holdEnd();
    settleTask();
    if (!task.decided) {
      // settleTask decided nothing (it cannot happen with the broker's own calls): nothing is held.
      task.publishEnd();
      return;
    }
    // A big result is written once, to its own file (fsynced); the journal and every snapshot carry its summary.
    const final = task.decidedFinal;
    if (records.results && final) this.resultSummary = records.results.write(task.id, withoutContent(final));
    const snapshot = task.decidedSnapshot();
    const ended = this.resultSummary ? withSummary(snapshot, this.resultSummary) : snapshot;
    const journal = records.journal;
    journal?.append({ e: 'ended', id: task.id, at: isoNow(), task: ended }, true);
    // With an attempt, `finished` waits for its processes, its capture and `exited` (the broker's run).
    const ranNothing = !this.attempt;
    this.published = (journal ? journal.durable() : Promise.resolve()).then(() => {
      task.publishEnd();
      if (ranNothing && !this.attempt) this.markFinished();
    });
  }

  /**
   * Makes the task's start durable before it is shown: the `queued` record, and an `attempt` record
   * for attempt `number` (its process id follows in another when it is spawned).
   */
  async durableStart(number: number): Promise<void> {
    const journal = this.records.journal;
    if (!journal) return;
    journal.append({ e: 'attempt', id: this.task.id, at: isoNow(), attempt: number });
    await journal.durable();
  }

  /** Ends the task as cancelled (nothing of it runs now). */
  endCancelled(reason: string): void {
    this.end(() => this.task.fail('cancelled', `was cancelled: ${reason}`));
  }

  /** The kinds' prepare step; false when one failed (the task then failed, before any attempt). */
  async prepare(): Promise<boolean> {
    try {
      await prepareRuns(this.runs, this.step());
      return true;
    } catch (error) {
      this.end(() => this.task.fail('error', `failed: ${(error as Error).message}`));
      return false;
    }
  }

  /** The kinds' capture step, once, when the task's processes are gone (before `exited` is announced). */
  async capture(): Promise<void> {
    if (this.captured) return;
    this.captured = true;
    await captureRuns(this.runs, this.step());
  }

  /** Waits out the delay before attempt `number + 1` (a cancel wakes it early: `wake`). */
  async waitToRetry(number: number, why: string): Promise<void> {
    const delay = backoffDelay(this.policy, number);
    this.task.retrying(why, delay);
    await new Promise<void>((wake) => {
      this.backoff = { cancel: this.clock.after(delay, wake, true), wake };
    });
    this.backoff = undefined;
  }

  /** Ends the wait between attempts now, if the task is waiting. */
  wake(): void {
    if (!this.backoff) return;
    this.backoff.cancel();
    this.backoff.wake();
  }

  /**
   * At most one progress record per task per interval: the first partial's at once, then, at the end
   * of each interval that had partials, the latest one's (so the journal ends up with the last
   * progress, not the first of its second). Called for every partial: while cooling it sets one flag,
   * with no clock read (a `Date.now()` per message was ~50 ns of the ~1.2 µs a partial costs).
   */
  journalProgress(): void {
    if (this.progressCooling) {
      this.progressPending = true;
      return;
    }
    if (this.records.journal) this.writeProgress(this.records.journal);
  }

  private writeProgress(journal: Journal): void {
    journal.append(progressRecord(this.task));
    this.progressCooling = true;
    this.cancelProgress = this.clock.after(DEFAULTS.progressJournalIntervalMs, () => {
      this.progressCooling = false;
      this.cancelProgress = undefined;
      if (!this.progressPending) return;
      this.progressPending = false;
      // Decided: its `ended` record carries the last progress (and nothing may follow it).
      if (!this.task.decided) this.writeProgress(journal);
    });
  }

  /** Appends the record `make` builds (only built with a journal); `durable` fsyncs it. */
  journal(make: () => JournalRecord, durable = false): void {
    this.records.journal?.append(make(), durable);
  }

  /**
   * A finished task leaves memory for history once its processes are gone: its Task (the whole
   * result, also in its settled promise, its spec with the caller's environment, its question, its
   * listeners) is dropped; its snapshot, log and attachments' content stay, and what a Retry needs of
   * its spec beyond what history stores. Before, only tasks whose result went to disk did: every
   * other finished task was kept whole until the history limit (~3 KB each in a hub: docs/performance.md § How cost grows with history).
   */
  retire(registry: TaskRegistry<LiveTask>): void {
    if (this.attempt) return;
    const { task } = this;
    const attachments = new Map<string, string | Uint8Array>();
    for (const a of task.final?.attachments ?? []) if (a.content !== undefined) attachments.set(a.name, a.content);
    registry.retire(task.id, storedSpec(task), attachments, retrySpec(task.spec));
  }

  /** The caller's handle; `cancel` is the broker's (it may stop a running attempt). */
  handle(cancel: (reason?: string) => void): TaskHandle {
    const { task, finished } = this;
    return {
      id: task.id,
      accepted: this.accepted,
      result: task.result,
      finished,
      cancel: (reason?: string) => {
        cancel(reason);
      },
      on: (_event: 'update', listener: (update: TaskUpdate) => void) => task.onUpdate(listener),
      snapshot: () => task.snapshot(),
    };
  }

  private step(): KindStep {
    return { task: this.task, journal: (record, durable) => this.records.journal?.append(record, durable) };
  }
}
