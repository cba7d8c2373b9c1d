/**
 * The one task seam every front-end uses (`run`, `wait`, `logs -f`, MCP, the gateway): start a task,
 * or follow one, and get the same handle — result promise, updates in order, cancel, answer — whether
 * it runs in this process (`localTasks`, ./local-tasks.ts) or on the hub (./hub-tasks.ts). On the
 * hub a handle is fed by the task's own follow stream (uncoalesced, in order), never by the panel's
 * all-task stream.
 *
 * Which one a front-end gets is one policy, `openTasks` (./open.ts): the hub when one runs, else a
 * broker in this process.
 */
import type { TaskHandle } from '../broker/types.js';
import type { TaskSpec } from '../model/task.js';
import type { ChangeService } from './changes.js';

export interface TaskCounts {
  running: number;
  queued: number;
}

/** A task started or followed through the seam. */
export interface TaskRun extends TaskHandle {
  /** Answers the agent's pending question `askId`; rejects when it no longer waits for it. */
  answer(askId: string, text: string): Promise<void>;
  /**
   * Stops following: no more updates reach this handle. The task goes on — except one this handle
   * submitted to the hub, which the hub then cancels (nobody is left to hear it; see `submit`).
   */
  stop(): void;
}

/** Where a front-end's tasks run. */
export interface TaskService {
  /** `'hub'` with the control endpoint's path, or `'local'` (a broker in this process). */
  readonly where: { kind: 'hub'; path: string } | { kind: 'local' };
  /** Starts a task attached to this front-end: on the hub, one whose front-end goes away is cancelled. */
  submit(spec: TaskSpec): Promise<TaskRun>;
  /** The handle of an existing task (rejects with a `not_found` BridgeError for an unknown id). */
  follow(id: string): Promise<TaskRun>;
  /** Running and queued tasks of whoever runs them (a hub's are all of the hub's). */
  counts(): Promise<TaskCounts>;
  /** Coding tasks' changes: diff, apply, discard, keep branch (docs/coding-agents.md). */
  readonly changes: ChangeService;
  /** Lets go of the hub connection (a local service leaves its broker to its owner). */
  close(): Promise<void>;
}
