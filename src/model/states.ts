/**
 * The task-state vocabulary every front-end uses (the CLI, MCP, the gateway, the panel, the tray,
 * `check`): which states are active or failed, the filters a task list offers, a finished snapshot's
 * failure, and the one-line summary of a partial. Defined here and nowhere else, like `isFinished`
 * beside the state type.
 */
import { waitingForTools } from './tools.js';
import { isFinished, STOP_REASONS, type FailureReason, type PartialResult, type TaskSnapshot, type TaskState } from './task.js';

/**
 * Working on it: an attempt runs, or the next one waits out its back-off. What "running" means in
 * every count and filter (the broker's `stats().running` too).
 */
export function isActive(state: TaskState): boolean {
  return state === 'running' || state === 'retrying';
}

/** Finished without succeeding (failed, cancelled, interrupted). */
export function isFailed(state: TaskState): boolean {
  return state === 'failed' || state === 'cancelled' || state === 'interrupted';
}

/**
 * Finished by a fault, not by a cancel: it failed, or the broker stopped while it ran (interrupted).
 * What `--state failed` lists and the tray counts as failed.
 */
export function isFault(state: TaskState): boolean {
  return state === 'failed' || state === 'interrupted';
}

/**
 * There is a failure to explain: the task finished without succeeding, or an attempt failed and the
 * next one waits (retrying; the snapshot's message says why the last one failed).
 */
export function isFailedOrRetrying(state: TaskState): boolean {
  return isFailed(state) || state === 'retrying';
}

/** The filters a task list offers (`backchannel tasks --state`, MCP `list_tasks`). */
export type StateFilter = 'running' | 'queued' | 'finished' | 'failed';

/** Each filter's test: running = active (incl. retrying), finished = any end, failed = a fault (not a cancel). */
export const STATE_FILTERS: Readonly<Record<StateFilter, (state: TaskState) => boolean>> = {
  running: isActive,
  queued: (state) => state === 'queued',
  finished: isFinished,
  failed: isFault,
};

/** The filter names, in the order help texts list them. */
export const STATE_FILTER_NAMES = Object.keys(STATE_FILTERS) as StateFilter[];

/** True when `name` is one of the filters (for validating a user's `--state`). */
export function isStateFilter(name: string): name is StateFilter {
  return Object.hasOwn(STATE_FILTERS, name);
}

/** How a finished task that did not succeed failed: its recorded reason and message. */
export interface TaskFailure {
  reason: FailureReason;
  message: string;
}

/**
 * The failure of a finished, unsuccessful snapshot; undefined while it runs or when it succeeded.
 * A snapshot without a recorded reason (an old history line) counts as `cancelled` when it was
 * cancelled and `crashed` otherwise; one without a message gets "<label>: <state>".
 */
export function failureOf(task: Pick<TaskSnapshot, 'state' | 'reason' | 'message' | 'label'>): TaskFailure | undefined {
  const reason = failureReasonOf(task);
  return reason && { reason, message: task.message ?? `${task.label}: ${task.state}` };
}

/** The reason alone, as `failureOf` gives it (for counts that need no message). */
export function failureReasonOf(task: Pick<TaskSnapshot, 'state' | 'reason'>): FailureReason | undefined {
  if (!isFailed(task.state)) return undefined;
  return task.reason ?? (task.state === 'cancelled' ? 'cancelled' : 'crashed');
}

/**
 * A task's state in words, the same in `tasks`, `show` and every list: `needs answer` while a question
 * waits for a person (`needs approval` for an ACP agent's permission request), `running (waiting for
 * Write)` while calls to its caller's tools wait,
 * `running (recovering)` while its agent outlives the hub's restart (`recovering`), else the state.
 */
export function stateInWords(task: Pick<TaskSnapshot, 'state' | 'pendingQuestion' | 'pendingToolCalls' | 'recovering'>): string {
  if (task.pendingQuestion) return task.pendingQuestion.approval ? 'needs approval' : 'needs answer';
  const waiting = waitingForTools(task.pendingToolCalls);
  if (waiting) return `${task.state} (${waiting})`;
  return task.recovering ? `${task.state} (recovering)` : task.state;
}

/** True for a reason the broker stopped the agent for (deadline, watchdog, budget, cancel): see `PartialResult`. */
export function isStopReason(reason: FailureReason | undefined): boolean {
  return reason !== undefined && (STOP_REASONS as readonly FailureReason[]).includes(reason);
}

/**
 * What a stopped task had produced, read from its snapshot (model/task.ts `PartialResult`): its last
 * partial, its answer to the stop (`result`), that answer's attachments, its change. Undefined
 * unless the task ended for a stop reason and something was produced.
 */
export function partialResultOf(
  task: Pick<TaskSnapshot, 'state' | 'reason' | 'lastPartial' | 'progress' | 'result' | 'resultSummary' | 'change'>,
): PartialResult | undefined {
  if (!isFinished(task.state) || !isStopReason(failureReasonOf(task))) return undefined;
  const partial: PartialResult = {};
  if (task.lastPartial !== undefined) partial.data = task.lastPartial;
  if (task.lastPartial !== undefined && task.progress !== undefined) partial.progress = task.progress;
  const answer = task.result ?? task.resultSummary;
  if (task.result) partial.answer = { status: task.result.status, ...(task.result.data !== undefined ? { data: task.result.data } : {}) };
  else if (task.resultSummary) partial.answer = { status: task.resultSummary.status };
  if (answer?.attachments && answer.attachments.length > 0) partial.attachments = answer.attachments;
  if (task.change) partial.change = task.change;
  return Object.keys(partial).length > 0 ? partial : undefined;
}

/** The fields of a partial's data that say what it is doing, in the order they are looked for. */
const PARTIAL_TEXT_FIELDS = ['message', 'step', 'text', 'status', 'phase'] as const;

/** A partial's data in one line for a status line or a status message ('' when it says nothing). */
export function describePartial(data: unknown): string {
  if (data === null || data === undefined) return '';
  if (typeof data === 'string') return oneLine(data);
  if (typeof data === 'object') {
    const record = data as Record<string, unknown>;
    for (const key of PARTIAL_TEXT_FIELDS) {
      if (typeof record[key] === 'string') return oneLine(record[key] as string);
    }
  }
  return '';
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 120);
}
