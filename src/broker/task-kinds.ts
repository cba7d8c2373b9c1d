/**
 * The task-kind seam: what a kind of task adds around the broker's own lifecycle, declared once.
 * The broker owns queueing, attempts, retries, guards and history; a kind owns one thing beside them
 * (coding tasks: a git worktree, the change captured from it, follow-ups in it — ./coding/). A future
 * kind (a scheduled run, a bridged tool call) hooks in through the same three steps
 * (`BrokerOptions.kinds`):
 *
 *   plan     at submit, synchronous, before the task is registered: may refuse the spec (throw a
 *            BrokerError: nothing registered, nothing run) or rewrite it (a follow-up links its thread);
 *   prepare  once, when the task leaves the queue (after the token budget let it start), before its
 *            first attempt: a throw fails the task (`error`, "failed: <message>") and no attempt runs;
 *   capture  once, when the task's processes are gone and before its exit is reported (`exited` and
 *            its journal record), also when prepare failed or a cancel ended the task between
 *            attempts; must not throw.
 *
 * A task cancelled while still queued is neither prepared nor captured. The broker guarantees the
 * order plan → prepare → capture, each at most once per task, and calls the kinds in the order it
 * lists them (coding tasks first). A kind reads the broker's tasks only through `KindContext.task`
 * and writes history only through `KindStep.journal`.
 */
import type { FinalPayload } from '../protocol/index.js';
import type { PendingQuestion, TaskSpec } from '../model/task.js';
import type { TaskBudget } from '../model/usage.js';
import type { AttemptSettings } from './task/attempt.js';
import type { JournalRecord } from './history/journal.js';
import type { Logger } from './log.js';
import type { Task } from './task/task.js';

/** What a step may touch: the task itself (its log, worktree, change …) and its history. */
export interface KindStep {
  readonly task: Task;
  /** Appends a record to the history journal (nothing without a data directory); `durable` fsyncs it. */
  journal(record: JournalRecord, durable?: boolean): void;
}

/** What a kind adds to one task, from its plan at submit to its capture before the exit is reported. */
export interface TaskRun {
  /** The spec the task is registered with, when the kind rewrote it (the next kind plans this one). */
  readonly spec?: TaskSpec;
  /** Where the task's attempts run, once prepared; undefined: the task's own cwd. */
  readonly cwd?: string | undefined;
  /** Step 2 (see above): rejects to fail the task before any attempt. */
  prepare?(step: KindStep): Promise<void>;
  /** Step 3 (see above): never rejects. */
  capture?(step: KindStep): Promise<void>;
  /** What the task's questions carry besides their text, read when the agent asks. */
  askContext?(): PendingQuestion['worktree'];
  /**
   * How each attempt starts, when the kind runs the task's command through a program of its own (an
   * ACP task runs its agent under the ACP adapter): changes `settings` (command, args, env) in place,
   * and may offer a process it started ready for it (`settings.spare`: the ACP kind's warm adapter).
   * The task's spec, its history and a Retry keep the command the run policy judged.
   */
  launch?(settings: AttemptSettings): void;
  /** The part of the task's budget the broker enforces, when the kind holds some of it itself. */
  budget?(budget: TaskBudget): TaskBudget | undefined;
}

/** A kind of task: one per broker, planning a run for each submitted spec that is of its kind. */
export interface TaskKind {
  /** The run this kind adds to a task with `spec` (resolved `cwd`), or undefined when it is not of this kind. */
  plan(id: string, spec: TaskSpec, cwd: string): TaskRun | undefined;
  /** Once the broker has started (its history restored), before the first task runs; never if it could not start. */
  start?(): void;
  /** When the broker closes, before it cancels its tasks; the broker waits for what it returns before it has closed. */
  close?(): void | Promise<void>;
}

/** A task the broker holds in memory (live, or ended and not yet retired to history). */
export interface HeldTask {
  readonly task: Pick<Task, 'finished' | 'final'>;
  /** Resolves when the task's processes are gone and its capture is done. */
  readonly finished: Promise<void>;
  readonly runs: readonly TaskRun[];
}

/** What the broker gives a kind when it makes it. */
export interface KindContext {
  task(id: string): HeldTask | undefined;
  readonly logger: Logger;
  /** Something the kind could not do but survived: logged, and the broker's `warning` event. */
  warn(message: string): void;
  /** A task's final payload, live or from history (null: none; undefined: no such task). */
  result?(id: string): FinalPayload | null | undefined;
}

/** Step 1, at submit: every kind plans in turn; the spec comes back as the last rewrite left it. */
export function planRuns(kinds: readonly TaskKind[], id: string, spec: TaskSpec, cwd: string): { spec: TaskSpec; runs: TaskRun[] } {
  const runs: TaskRun[] = [];
  for (const kind of kinds) {
    const run = kind.plan(id, spec, cwd);
    if (!run) continue;
    runs.push(run);
    spec = run.spec ?? spec;
  }
  return { spec, runs };
}

/** Step 2, before the first attempt: rejects with the first run that could not prepare. */
export async function prepareRuns(runs: readonly TaskRun[], step: KindStep): Promise<void> {
  for (const run of runs) await run.prepare?.(step);
}

/** Step 3, before the exit is reported. */
export async function captureRuns(runs: readonly TaskRun[], step: KindStep): Promise<void> {
  for (const run of runs) await run.capture?.(step);
}

/** Where the task's attempts run: the last run that moved them, else undefined. */
export function attemptCwd(runs: readonly TaskRun[]): string | undefined {
  return runs.reduce<string | undefined>((cwd, run) => run.cwd ?? cwd, undefined);
}

/** Step 2½, each attempt: the runs that launch the command their own way, in order. */
export function launchAttempt(runs: readonly TaskRun[], settings: AttemptSettings): void {
  for (const run of runs) run.launch?.(settings);
}

/** The budget the broker enforces: the task's, less what its runs hold themselves. */
export function enforcedBudget(runs: readonly TaskRun[], budget: TaskBudget | undefined): TaskBudget | undefined {
  for (const run of runs) if (budget && run.budget) budget = run.budget(budget);
  return budget;
}

/** What a question carries: the first run that has something to add. */
export function askContext(runs: readonly TaskRun[]): PendingQuestion['worktree'] {
  for (const run of runs) {
    const context = run.askContext?.();
    if (context) return context;
  }
  return undefined;
}
