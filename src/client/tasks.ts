/**
 * The shapes of the one client (./client.ts): the handle of a task (`TaskRun`) and the backend seam
 * a client is written once against (`TaskBackend`), filled three times — the hub over its control
 * endpoint (./hub-tasks.ts), a broker in this process (./local-tasks.ts), and the history on disk
 * read-only (./history.ts). An in-memory pair (./in-memory.ts) fills the hub's side without sockets.
 *
 * On the hub a handle is fed by the task's own follow stream (uncoalesced, in order), never by the
 * panel's all-task stream.
 */
import type { BackchannelBridge } from '../bridge/contract.js';
import type { TaskHandle } from '../model/handle.js';
import type { TaskSpec, ToolAnswer } from '../model/task.js';
import type { AnswerDoor } from '../model/questions.js';
import type { ChangeService } from './changes.js';

/** The broker's load: its tasks running and waiting to run (the panel's counts by state are TaskCounts). */
export interface TaskLoad {
  running: number;
  queued: number;
}

/** A task started or followed through the client. */
export interface TaskRun extends TaskHandle {
  /** Answers the agent's pending question `askId`; rejects when it no longer waits for it. */
  answer(askId: string, text: string, via?: AnswerDoor): Promise<void>;
  /**
   * Answers the agent's pending call `callId` to a tool this caller hosts (`TaskSpec.tools`) with the
   * tool's content or an error. Rejects with a BridgeError — `conflict` (or `not_found` for a task the
   * broker no longer knows) — when the task no longer waits on that call.
   */
  answerToolCall(callId: string, answer: ToolAnswer): Promise<void>;
  /**
   * Merges `meta` (a JSON object of at most MAX_ANNOTATION_BYTES, MAX_ANNOTATION_DEPTH levels deep:
   * model/annotations.ts) into the task's annotations, at the top level; they reach its final
   * payload's meta and its snapshot (`annotations`). Rejects with a BridgeError — `invalid_request`
   * for a bad annotation, `conflict` once the task has ended, `not_found` for an unknown task.
   */
  annotate(meta: Record<string, unknown>): Promise<void>;
  /**
   * Stops following: no more updates reach this handle. The task goes on — except one this handle
   * started attached on the hub, which the hub then cancels (nobody is left to hear it; see `run`).
   */
  stop(): void;
}

/** Where a client's tasks run: the hub (with its control endpoint's path), this process, or nowhere (the history on disk). */
export type TaskPlace = { kind: 'hub'; path: string } | { kind: 'local' } | { kind: 'history'; dataDir: string };

/** What a client reaches tasks through. Every call of the one route table is on `bridge`. */
export interface TaskBackend {
  readonly where: TaskPlace;
  /** Tasks started here may ask for a git worktree (`TaskSpec.worktree`): see `BackchannelClient.keepsWorktrees`. */
  readonly keepsWorktrees: boolean;
  /** The calls (list, get, cancel, answer, retry, insights, …) and the panel's all-task stream. */
  readonly bridge: BackchannelBridge;
  /** Starts a task attached to this client: on the hub, one whose client goes away is cancelled. */
  run(spec: TaskSpec): Promise<TaskRun>;
  /** Starts a task detached from this client (it outlives it): the id once it is accepted. */
  start(spec: TaskSpec): Promise<{ id: string }>;
  /** The handle of an existing task (rejects with a `not_found` BridgeError for an unknown id). */
  follow(id: string): Promise<TaskRun>;
  /** Running and queued tasks of whoever runs them (a hub's are all of the hub's). */
  counts(): Promise<TaskLoad>;
  /** Coding tasks' changes: diff, apply, discard, keep branch (docs/coding-agents.md). */
  readonly changes: ChangeService;
  /** Lets go of the hub connection, or closes what the backend opened for itself. */
  close(): Promise<void>;
}
