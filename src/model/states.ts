/**
 * The task-state vocabulary every front-end uses (the CLI, MCP, the gateway, the panel, `check`):
 * which states are active or failed, a finished snapshot's failure, and the one-line summary of a
 * partial. Defined here and nowhere else, like `isFinished` beside the state type.
 */
import type { FailureReason, TaskSnapshot, TaskState } from './task.js';

/** Working on it: an attempt runs, or the next one waits out its back-off. */
export function isActive(state: TaskState): boolean {
  return state === 'running' || state === 'retrying';
}

/** Finished without succeeding (failed, cancelled, interrupted). */
export function isFailed(state: TaskState): boolean {
  return state === 'failed' || state === 'cancelled' || state === 'interrupted';
}

/** How a finished task that did not succeed failed: its recorded reason and message. */
export interface TaskFailure {
  reason: FailureReason;
  message: string;
}

/**
 * The failure of a finished, unsuccessful snapshot; undefined while it runs or when it succeeded.
 * A snapshot without a recorded reason (an old history line) counts as `cancelled` when it was
 * cancelled and `crashed` otherwise.
 */
export function failureOf(task: Pick<TaskSnapshot, 'state' | 'reason' | 'message' | 'label'>): TaskFailure | undefined {
  if (!isFailed(task.state)) return undefined;
  const reason = task.reason ?? (task.state === 'cancelled' ? 'cancelled' : 'crashed');
  return { reason, message: task.message ?? `${task.label}: ${task.state}` };
}

/** A partial's data in one line for a status line or a status message ('' when it says nothing). */
export function describePartial(data: unknown): string {
  if (data === null || data === undefined) return '';
  if (typeof data === 'string') return oneLine(data);
  if (typeof data === 'object') {
    const record = data as Record<string, unknown>;
    for (const key of ['message', 'step', 'text', 'status']) {
      if (typeof record[key] === 'string') return oneLine(record[key] as string);
    }
  }
  return '';
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 120);
}
