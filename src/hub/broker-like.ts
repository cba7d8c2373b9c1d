/**
 * The port the hub's calls serve over: the part of a broker they use (`BrokerLike`), structural, so
 * TaskBroker, the read-only history (client/history.ts) and tests' stand-ins all provide it.
 */
import type { BridgeInfo, TaskCounts } from '../bridge/contract.js';
import type { Insights, InsightsQuery } from '../model/insights.js';
import type { FinalPayload } from '../protocol/index.js';
import type { CommandLine, LogLine, TaskPage, TaskPageQuery, TaskSnapshot, TaskSpec, TaskUpdate, ToolAnswer } from '../model/task.js';
import type { WorkerInfo } from '../model/fleet.js';
import type { ApplyOutcome, TaskChange, WorktreeRecord } from '../model/change.js';
import type { ResultFile } from '../broker/history/results.js';

/** A task the broker took: its id, its result, and when it is durable (see TaskHandle.accepted). */
export interface StartedTask {
  id: string;
  result: Promise<unknown>;
  accepted?: Promise<void>;
}

/**
 * What an update carries besides itself: the picture of its task right after it, made only when
 * called (most listeners never need it). A broker without it: listeners read `get(id)` instead.
 */
export type TaskPicture = () => TaskSnapshot | undefined;

/** The coding kind's calls (`TaskBroker.coding`): a coding task's change, its worktree and branch. */
export interface CodingLike {
  /** Throws a BrokerError('unknown_task') for a task without a worktree. */
  change(id: string): Promise<TaskChange>;
  apply(ids: readonly string[]): Promise<ApplyOutcome>;
  discard(id: string): Promise<WorktreeRecord>;
  keepBranch(id: string): Promise<WorktreeRecord>;
  /** Every worktree the registry lists, oldest first. */
  list(): WorktreeRecord[];
}

/** The part of `TaskBroker` the bridge uses. */
export interface BrokerLike {
  /** `accepted`: resolves once the task is durable (the bridge acknowledges it only then). */
  submit(spec: TaskSpec): StartedTask;
  tasks(): TaskSnapshot[];
  get(id: string): TaskSnapshot | undefined;
  /** One page of tasks, newest first; without it the bridge pages `tasks()` itself. */
  taskPage?(query: TaskPageQuery): TaskPage;
  /** What the newest `scan` tasks ran, newest first, without copying them; without it `info` pages. */
  newestCommandLines?(scan: number): Iterable<CommandLine>;
  /** Tasks by state; without it events carry no counts (a panel counts the tasks it has). */
  stats?(): TaskCounts;
  /**
   * The whole final payload (also when snapshots carry only a summary); null when there is none,
   * undefined for an unknown task. Without it the bridge answers with the snapshot's `result`.
   */
  result?(id: string): FinalPayload | null | undefined;
  /**
   * The file of a task's whole result when `result` would read it from disk, opened to be sent as it
   * is (the caller closes it); null when that file is missing or refused; undefined otherwise.
   */
  resultFile?(id: string): ResultFile | null | undefined;
  logOf(id: string): LogLine[];
  /** An attachment's content while the broker still holds it. */
  attachment?(id: string, name: string): string | Uint8Array | undefined;
  cancel(id: string, reason?: string): boolean;
  retry(id: string): StartedTask;
  answer(id: string, askId: string, text: string, via?: string): boolean;
  /** Answers a pending tool call; false when the task does not wait on a call with that id. */
  answerToolCall(id: string, callId: string, answer: ToolAnswer): boolean;
  /** Merges a caller's annotations into a task's; false when it is not live or already decided. */
  annotate?(id: string, meta: Record<string, unknown>): boolean;
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  /** The fleet serving a Redis queue (a broker without one has no workers). */
  fleet?(): Promise<WorkerInfo[]>;
  /** What the task endpoints refused or failed to accept (see TaskBroker.connections). */
  connections?(): NonNullable<BridgeInfo['connections']>;
  /** Figures of finished tasks; a broker without it answers `insights` with an internal error. */
  insights?(query: InsightsQuery): Insights;
  /** Coding tasks' changes; absent: a broker keeping no worktrees (every change call is `not_found`). */
  readonly coding?: CodingLike;
  on(event: 'update', listener: (update: TaskUpdate, picture?: TaskPicture) => void): unknown;
  on(event: 'paused', listener: (paused: boolean) => void): unknown;
  on(event: 'removed', listener: (taskIds: string[]) => void): unknown;
  off?(event: 'update', listener: (update: TaskUpdate, picture?: TaskPicture) => void): unknown;
  off?(event: 'paused', listener: (paused: boolean) => void): unknown;
  off?(event: 'removed', listener: (taskIds: string[]) => void): unknown;
}

/** Listens to the broker's updates; returns the function that stops it (the one `on` returned, else `off`). */
export function listenToUpdates(broker: BrokerLike, listener: (update: TaskUpdate, picture?: TaskPicture) => void): () => void {
  const detach = broker.on('update', listener);
  return () => {
    if (typeof detach === 'function') (detach as () => void)();
    else broker.off?.('update', listener);
  };
}
