/**
 * A live task's attempts, from its kinds' prepare step to their capture: attempt 1, then — while the
 * decision is a retry and nobody cancelled — a backoff and the next one. Each attempt runs where the
 * AttemptQueue puts it (here, or a worker of a fleet), in the directory the task's kinds give (a
 * coding task's worktree). A task ends inside this loop exactly once (`LiveTask.end`); the capture
 * step runs before `exited` is announced and journalled, so a caller that saw it finds the change.
 */
import { isoNow } from '../protocol/index.js';
import { isStopReason } from '../model/states.js';
import { budgetOf, overBudget } from '../model/usage.js';
import type { Logger } from './log.js';
import type { LiveTask } from './live-task.js';
import { processStartTime } from './process/start-time.js';
import type { AttemptQueue } from './queue/attempt-queue.js';
import { attemptCwd, enforcedBudget, launchAttempt } from './task-kinds.js';
import type { AttemptOutcome, AttemptSettings } from './task/attempt.js';
import { decide, settle } from './task/decision.js';
import { attemptSink } from './task/sink.js';
import type { Task } from './task/task.js';

/** What the loop needs of the broker. */
export interface AttemptLoop {
  /** Where attempts run: here (default) or on a worker fleet. */
  readonly attempts: AttemptQueue;
  readonly logger: Logger;
  /** The settings of attempt `number` of `task` (see settings.ts `attemptSettings`). */
  settings(task: Task, number: number): AttemptSettings;
  /** True once the broker closes: no attempt is retried then. */
  closing(): boolean;
}

/** Runs the task's attempts until it has ended; its kinds' steps before and after them. */
export async function runAttempts(entry: LiveTask, loop: AttemptLoop): Promise<void> {
  const { task } = entry;
  const prepared = await entry.prepare();
  for (let number = 1; prepared && !task.decided; number++) {
    // Shown as running only once its start is on disk: a crash then leaves it `interrupted`, never missing.
    await entry.durableStart(number);
    if (task.decided) break;
    const retry = await runAttempt(entry, number, loop);
    if (retry === undefined) break;
    // Cancelled (or the broker closing) after this attempt was already decided for a retry: no next attempt.
    if (entry.cancelRequested !== undefined) {
      entry.endCancelled(entry.cancelRequested);
      break;
    }
    await entry.waitToRetry(number, retry);
  }
  await entry.capture();
}

/** Runs attempt `number` to its end. Returns why to retry, or undefined when the task has ended. */
async function runAttempt(entry: LiveTask, number: number, loop: AttemptLoop): Promise<string | undefined> {
  const { task } = entry;
  task.startAttempt(number);
  const settings = loop.settings(task, number);
  // A coding task runs in its worktree, in the subdirectory its cwd is in the repository.
  settings.cwd = attemptCwd(entry.runs) ?? settings.cwd;
  launchAttempt(entry.runs, settings);
  const attempt = loop.attempts.attempt(
    settings,
    attemptSink(task, loop.logger, {
      partial: () => {
        entry.journalProgress();
        enforceBudget(entry);
      },
      ask: (message, reply) => entry.question.ask(message, reply),
      toolCall: (message, reply) => entry.toolCalls.call(message, reply),
      // The start time tells a restarted broker its own leftover agent from a reused pid (local processes only).
      spawned: (pid) =>
        entry.journal(() => {
          const pidStart = loop.attempts.kind === 'local' ? processStartTime(pid) : undefined;
          return { e: 'attempt', id: task.id, at: isoNow(), attempt: number, pid, pidStart };
        }),
    }),
  );
  entry.attempt = attempt;
  task.started();
  await attempt.start();
  const outcome = await attempt.outcome;
  // Its agent is done or stopping: calls it made wait no more (a next attempt's agent starts afresh).
  entry.toolCalls.dropAll(`attempt ${number} ended`);
  const retry = await decideAttempt(entry, number, outcome, loop);
  // The agent's final is acked once the task's ending is on disk (a retry's at once): durable before reported.
  if (retry === undefined) void entry.published.then(() => attempt.acknowledge?.());
  else attempt.acknowledge?.();
  await attempt.finished;
  entry.attempt = undefined;
  if (retry !== undefined) return retry;
  // The ending is shown (durable) before the exit is: `exited` always follows `ended`.
  await entry.published;
  await entry.capture();
  task.attemptExited(attempt.exitCode, attempt.exitSignal ?? null);
  // The record written at the decision was fsynced and holds the result; this one adds the exit code and signal only.
  entry.journal(() => ({ e: 'exited', id: task.id, at: isoNow(), exitCode: attempt.exitCode, signal: attempt.exitSignal ?? null }));
  return undefined;
}

/**
 * The budget guard: once the agent's own report (its running total, read by ../model/usage.ts) is
 * over the task's budget, the attempt is stopped — cancel, then the whole process tree — and the task
 * ends `budget_exceeded`, never retried; the usage at the stop stays in its snapshot.
 */
function enforceBudget(entry: LiveTask): void {
  const { task } = entry;
  // It runs on every partial: a task with no usage reported (most) stops before the budget is built.
  const usage = task.usage;
  if (!usage || task.finished) return;
  const budget = enforcedBudget(entry.runs, budgetOf(task.spec));
  if (!budget) return;
  const why = overBudget(usage, budget);
  if (why !== undefined) entry.attempt?.stop('budget_exceeded', `over budget: ${why}`);
}

/**
 * A final payload whose own report is over the budget (220 tokens against 150, reported only at the
 * end) ends the task `budget_exceeded`, its payload kept as the result, never retried.
 */
function finalOverBudget(entry: LiveTask, outcome: AttemptOutcome): AttemptOutcome {
  if (outcome.kind !== 'final' || outcome.payload.status !== 'success') return outcome;
  const budget = enforcedBudget(entry.runs, budgetOf(entry.task.spec));
  const usage = budget && entry.task.usageWith(outcome.payload);
  const why = usage && overBudget(usage, budget);
  if (why === undefined) return outcome;
  const message = `over budget: ${why}`;
  return {
    kind: 'failure',
    reason: 'budget_exceeded',
    message,
    retryable: false,
    answer: { payload: outcome.payload, channel: outcome.channel },
  };
}

/**
 * Applies an attempt's outcome. Returns a retry reason, or undefined when the task has ended. A task
 * the broker stopped (deadline, watchdog, budget, cancel) ends once its agent is gone, with what it
 * produced: its answer to the stop as the result, its last partial, and a coding task's change,
 * captured first (model/task.ts `PartialResult`); never thrown away.
 */
async function decideAttempt(entry: LiveTask, number: number, outcome: AttemptOutcome, loop: AttemptLoop): Promise<string | undefined> {
  const { task } = entry;
  if (task.decided) return undefined;
  const canRetry = number < task.maxAttempts && !entry.cancelRequested && !loop.closing();
  const stopped = outcome.kind === 'failure' && isStopReason(outcome.reason);
  if (stopped) {
    entry.question.drop();
    await entry.attempt?.finished;
  }
  const answer = stopped ? entry.attempt?.answer : undefined;
  const applied = outcome.kind === 'failure' && answer ? { ...outcome, answer } : finalOverBudget(entry, outcome);
  const decision = decide(applied, canRetry, entry.cancelRequested !== undefined);
  if (decision.kind === 'retry') return decision.why;
  if (stopped) await entry.capture();
  entry.end(() => settle(task, decision));
  return undefined;
}
