/**
 * Follow-ups (`worktree.reuse`): a task that continues in the worktree of an earlier one, one thread
 * per worktree. This file holds the thread's conventions and nothing else: who is in a thread, and
 * how a follow-up's spec links the thread (`parent`) and resumes the agent's session (`input.resume`).
 */
import type { FinalPayload } from '../../protocol/index.js';
import type { WorktreeRecord } from '../../model/change.js';
import type { TaskSpec } from '../../model/task.js';

/** The tasks of a worktree's thread: the one that made it, then its follow-ups, in order. */
export function threadOf(record: WorktreeRecord): string[] {
  return [record.taskId, ...(record.followUps ?? [])];
}

/** The last task of a worktree's thread: the one a follow-up continues from. */
export function lastOf(record: WorktreeRecord): string {
  return record.followUps?.at(-1) ?? record.taskId;
}

/** The session an agent reported in its final payload (`meta.session_id`), if it did. */
export function sessionOf(final: FinalPayload | undefined): string | undefined {
  const session = final?.meta?.session_id;
  return typeof session === 'string' ? session : undefined;
}

/**
 * A follow-up's spec: linked to the last task of the thread (`parent`, unless the caller set one),
 * and — when that task's agent reported its own session (`meta.session_id`, as the claude-code,
 * cursor-cli and codex templates do) and the input does not say otherwise — resuming it
 * (`input.resume`). `ended` is the session of the last task when it ended a moment ago: its change
 * (which records the session) may not be captured yet, its final payload has it.
 */
export function followUpSpec(spec: TaskSpec, record: WorktreeRecord, ended: string | undefined): TaskSpec {
  const session = record.session ?? ended;
  const next: TaskSpec = { ...spec, parent: spec.parent ?? lastOf(record) };
  if (session === undefined || session === '') return next;
  const input: unknown = spec.input;
  if (typeof input === 'string') next.input = { prompt: input, resume: session };
  else if (typeof input === 'object' && input !== null && !Array.isArray(input) && !('resume' in input))
    next.input = { ...input, resume: session };
  return next;
}
