import type { TaskSnapshot } from '../bridge/contract.js';
import { isFinished, type FailureReason, type TaskState } from '../model/task.js';
import { isActive } from '../model/states.js';
import { formatDuration } from '../model/duration.js';

export { formatDuration } from '../model/duration.js';

export const STATE_LABEL: Record<TaskState, string> = {
  queued: 'Queued',
  running: 'Running',
  retrying: 'Retrying',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
  interrupted: 'Interrupted',
};

/** Why a task ended without success, in words (the reason code stays visible in the status line). */
export const REASON_LABEL: Record<FailureReason, string> = {
  error: 'The sub-agent reported an error',
  timeout: 'It timed out',
  stalled: 'It stalled (no message within the heartbeat timeout)',
  cancelled: 'It was cancelled',
  crashed: 'The sub-agent crashed',
  protocol: 'The sub-agent broke the protocol',
  refused: 'Refused (not allowed to run)',
  budget_exceeded: 'Stopped over its budget',
};

/**
 * One line saying why a task failed: "The sub-agent crashed: the agent exited with code 3 without
 * sending a final payload". The label says the reason, so the snapshot's `detail` (the message
 * without the broker's "failed: " framing) follows it; history without one shows its `message`.
 */
export function failureText(task: Pick<TaskSnapshot, 'reason' | 'message' | 'detail' | 'state'>, fallback?: string): string {
  const label = task.reason ? REASON_LABEL[task.reason] : task.state === 'interrupted' ? 'Interrupted' : 'Failed';
  const message = task.detail ?? task.message ?? fallback;
  return message ? `${label}: ${message}` : label;
}

/** A model name worth showing: not empty and not a placeholder such as "none". */
export function modelName(meta: Record<string, unknown> | undefined): string | undefined {
  const model = meta?.model_used;
  return typeof model === 'string' && model.trim() && !/^(none|null|undefined|n\/a|unknown)$/i.test(model.trim()) ? model : undefined;
}

export { isFinished } from '../model/task.js';
export { countsSummary, countsText } from '../bridge/summary.js';
export { isActive } from '../model/states.js';

/** 0 = running (and retrying), 1 = queued, 2 = finished: the list's group order. */
function group(state: TaskState): number {
  if (isActive(state)) return 0;
  if (state === 'queued') return 1;
  return 2;
}

/**
 * Running first (longest-running on top), then queued (next to start on top), then finished
 * (most recent on top). Ties fall back to the id, so the order is stable between renders.
 */
export function compareTasks(a: TaskSnapshot, b: TaskSnapshot): number {
  const ga = group(a.state);
  const gb = group(b.state);
  if (ga !== gb) return ga - gb;
  let byTime: number;
  if (ga === 0) byTime = cmp(a.startedAt ?? a.createdAt, b.startedAt ?? b.createdAt);
  else if (ga === 1) byTime = cmp(a.createdAt, b.createdAt);
  else byTime = cmp(b.endedAt ?? b.createdAt, a.endedAt ?? a.createdAt);
  return byTime !== 0 ? byTime : cmp(a.id, b.id);
}

/** Plain code-unit order: ISO timestamps and ids sort correctly, and it is much cheaper than localeCompare. */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A byte count for people: 512 B, 9.8 KiB, 10.0 MiB. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** Elapsed time for an active task, total time for a finished one, time waiting for a queued one. */
export function taskTime(task: TaskSnapshot, now: number): string {
  const start = Date.parse(task.startedAt ?? task.createdAt);
  if (isFinished(task.state)) {
    // An interrupted task has no end time: how long it ran is unknown.
    return task.startedAt && task.endedAt ? formatDuration(Date.parse(task.endedAt) - start) : '–';
  }
  return formatDuration(now - start);
}

/** Made once: `toLocaleString` with options builds a new formatter (ICU's locale data) at every call. */
let timeFormat: Intl.DateTimeFormat | undefined;

export function formatTime(iso: string | undefined): string {
  if (!iso) return '–';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  timeFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
  return timeFormat.format(date);
}

/** A command line for display only (never executed): quotes arguments that need it. */
export function commandLine(command: string, args: readonly string[]): string {
  return [command, ...args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : JSON.stringify(part))).join(' ');
}
