/**
 * The one contract between the panel (src/renderer) and whatever hosts the broker.
 * Implemented twice: the Electron preload (`window.backchannel` over ipcRenderer) and the headless
 * HTTP bridge (JSON endpoints + SSE). Both must answer the same calls the same way; a shared test
 * suite checks that. Everything crossing it is plain JSON.
 */
import type { Figures, Insights, InsightsQuery } from '../model/insights.js';
import type { LogLine, ResultSummary, TaskPage, TaskPageQuery, TaskSnapshot, TaskState, TaskUpdate } from '../model/task.js';
import type { FinalPayload } from '../protocol/index.js';
import type { WorkerInfo } from '../model/fleet.js';
import type { ApplyOutcome, TaskChange, WorktreeRecord, WorktreeRequest } from '../model/change.js';
import type { TaskRequest } from '../model/task-request.js';
import type { ToolAnswer } from '../model/tools.js';
import type { AnswerDoor } from '../model/questions.js';
import type { ErrorBody } from '../model/errors.js';
import type { FireRecord, Schedule } from '../schedules/schedule.js';
import type { FirePageQuery, ScheduleDetails, ScheduleRequest, ScheduleView } from '../schedules/views.js';

export type {
  FinalPayload,
  Figures,
  Insights,
  InsightsQuery,
  LogLine,
  ResultSummary,
  TaskPage,
  TaskPageQuery,
  TaskSnapshot,
  TaskState,
  TaskUpdate,
  WorkerInfo,
  ApplyOutcome,
  TaskChange,
  WorktreeRecord,
  WorktreeRequest,
  FireRecord,
  FirePageQuery,
  Schedule,
  ScheduleDetails,
  ScheduleRequest,
  ScheduleView,
};
export { FIRE_PAGE_SIZE, MAX_FIRE_PAGE_SIZE } from '../model/limits.js';
export { MAX_TASK_PAGE_SIZE, RESULT_INLINE_MAX_BYTES, TASK_PAGE_SIZE } from '../model/task.js';

/**
 * What the panel may start: a command line (never a shell string). Declared once, as the zod schema
 * `TASK_REQUEST` (src/model/task-request.ts): its type, check, JSON Schema and copy to a `TaskSpec`.
 * `env`, `callerEnv` (the submitting terminal's environment, never journaled or shown) and `origin`
 * are never set by the panel; the panel's server sets `origin: 'panel'` whatever the request says.
 */
export type SubmitRequest = TaskRequest;

/**
 * A preset: what the panel's "New task" offers to start with one click (a demo agent, or the agent
 * of a sub-agent template). Not a template: templates are the scaffolds of `backchannel new`.
 */
export interface PresetInfo {
  name: string;
  description: string;
  /** The ready-to-run request this preset starts. */
  request: SubmitRequest;
}

/**
 * A task and its log. Light on purpose (the panel asks for it on every change of the log): a big
 * result is only its `task.resultSummary` here; `taskResult` fetches the whole payload.
 */
export interface TaskDetails {
  task: TaskSnapshot;
  log: LogLine[];
}

export interface BridgeInfo {
  version: string;
  mode: 'electron' | 'headless';
  /** Where the app log is written (shown in the panel). */
  logPath: string;
  paused: boolean;
  /** What "New task" offers to start (see PresetInfo). */
  presets: PresetInfo[];
  /** Most recent distinct command lines, newest first. */
  recent: SubmitRequest[];
  /**
   * What the broker's task endpoints refused or failed to accept since it started (absent: a broker
   * that does not count them).
   */
  connections?: { refused: number; acceptErrors: number; lastAcceptError?: string };
}

/** How many tasks there are in each state, live and in history (`running` includes `retrying`). */
export interface TaskCounts {
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  interrupted: number;
}

/**
 * Pushed to subscribers: coalesced — at most one entry per task per flush, at most one flush a frame
 * (16 ms), 100 ms apart while the broker is saturated.
 * The first event a new subscription receives is a full picture (`full: true`, the paused flag, and
 * every live task with the newest TASK_PAGE_SIZE tasks of all), so a listener that subscribes or
 * reconnects late never misses a change. Older tasks are not in it, however long the history:
 * `older` is the cursor to page them with `listTaskPage({ before: older })`.
 */
export interface BridgeEvent {
  /** Tasks that changed since the last event (full snapshots; a big result as its `resultSummary`). */
  tasks: TaskSnapshot[];
  /** `tasks` is the picture (live tasks and the newest page): replace, do not merge. */
  full?: boolean;
  /** With `full`: there are older tasks; pass as `before` to `listTaskPage` for the next page. */
  older?: string;
  /** Tasks by state, of all there are (not only those sent): in the full picture, then when they change. */
  counts?: TaskCounts;
  /** Ids of tasks removed from history. */
  removed?: string[];
  /** Set when the queue was paused or resumed. */
  paused?: boolean;
}

export interface BackchannelBridge {
  info(): Promise<BridgeInfo>;
  /** Every task, oldest first; big results as summaries. Long histories: prefer `listTaskPage`. */
  listTasks(): Promise<TaskSnapshot[]>;
  /** One page of tasks, newest first, with the cursor of the next page (`TaskPageQuery`). */
  listTaskPage(query: TaskPageQuery): Promise<TaskPage>;
  getTask(id: string): Promise<TaskDetails>;
  /**
   * The whole final payload of a task (attachments as headers; `attachment` has their bytes), also
   * when snapshots carry only its `resultSummary`. `null` while it has none; `not_found` for an
   * unknown task.
   */
  taskResult(id: string): Promise<FinalPayload | null>;
  /** Calls `listener` with coalesced changes; returns the unsubscribe function. */
  subscribe(listener: (event: BridgeEvent) => void): () => void;
  submit(request: SubmitRequest): Promise<{ id: string }>;
  /** `reason` is what the panel and history show. @default 'cancelled by the user' */
  cancel(id: string, reason?: string): Promise<void>;
  /** Runs a finished task again as a new task with the same spec. */
  retry(id: string): Promise<{ id: string }>;
  /** Answers a sub-agent's question (`ask`); `via` is the door it came through (an approval records it). */
  answer(id: string, askId: string, answer: string, via?: AnswerDoor): Promise<void>;
  /**
   * Answers a sub-agent's call `callId` to a tool its caller hosts (`tool_call`, docs/protocol.md §6.1)
   * with the tool's content or an error; `not_found` for an unknown task, `conflict` when the task no
   * longer waits on that call.
   */
  answerToolCall(id: string, callId: string, answer: ToolAnswer): Promise<void>;
  /**
   * Merges the caller's `meta` (a JSON object, bounded: model/annotations.ts) into a running task's
   * annotations, which reach its final payload's meta; `not_found` for an unknown task, `conflict`
   * once it has ended, `invalid_request` for an annotation out of bounds.
   */
  annotate(id: string, meta: Record<string, unknown>): Promise<void>;
  setPaused(paused: boolean): Promise<void>;
  /** Opens the app log (Electron: in the OS; headless: returns its path only). */
  openLog(): Promise<{ path: string }>;
  /** The workers serving a Redis queue, with load and heartbeat age; empty when tasks run locally. */
  fleet(): Promise<WorkerInfo[]>;
  /** Duration, outcome and token figures of finished tasks (docs/insights.md). */
  insights(query: InsightsQuery): Promise<Insights>;
  /** One attachment of a task's final payload, for download (snapshots carry only name and size). */
  attachment(id: string, name: string): Promise<AttachmentDownload>;
  /**
   * A coding task's change (`task.change` is its summary) with the whole diff against its base;
   * `not_found` for a task without a worktree.
   */
  taskChange(id: string): Promise<TaskChange>;
  /**
   * Applies the changes of `ids`, in that order, into the user's checkout they were made from: all,
   * or none (the tree unchanged) and the first that conflicts with its files (`ok: false`).
   */
  applyChanges(ids: string[]): Promise<ApplyOutcome>;
  /** Removes a finished coding task's worktree and branch (`conflict` while it runs). */
  discardChange(id: string): Promise<WorktreeRecord>;
  /** Removes a finished coding task's worktree and keeps its branch, uncommitted work committed onto it. */
  keepBranch(id: string): Promise<WorktreeRecord>;
  /** The worktrees Backchannel made, oldest first. */
  listWorktrees(): Promise<WorktreeRecord[]>;
  /**
   * The schedules (docs/schedules.md) and each one's next fire, newest fire record, newest run and
   * that run's task state, by name. Every schedule call needs a hub that fires them (`serve`, the
   * app): without one it is refused with `conflict`.
   */
  listSchedules(): Promise<ScheduleView[]>;
  /** One schedule with a page of its fire records, newest first (`FirePageQuery`); `not_found` for an unknown name. */
  getSchedule(name: string, query?: FirePageQuery): Promise<ScheduleDetails>;
  /**
   * Creates (or replaces) a schedule: `invalid_request` with the first problem of its fields, `refused`
   * when the run policy does not let the `schedule` door run its command (nothing is stored then).
   */
  addSchedule(request: ScheduleRequest): Promise<ScheduleView>;
  /** Pauses (fires are recorded `skipped: paused`) or resumes a schedule; resuming replays nothing. */
  setSchedulePaused(name: string, paused: boolean): Promise<ScheduleView>;
  /** Removes a schedule; its fire records stay. `not_found` for an unknown name. */
  removeSchedule(name: string): Promise<void>;
  /** Runs a schedule's command now, outside its times: the fire record (`manual`, with its task id). */
  runScheduleNow(name: string): Promise<FireRecord>;
}

/** An attachment's bytes, base64-encoded so they travel as JSON over IPC and HTTP. */
export interface AttachmentDownload {
  name: string;
  bytes: number;
  encoding: 'binary' | 'utf8';
  base64: string;
}

/**
 * One line of a followed submission (the control endpoint's `POST /api/follow`, not a panel call):
 * the task's picture after each change and, from the second line on, the update that made it. Not
 * coalesced — every partial's data arrives, in order — for front-ends that relay a task's output as
 * it comes (the gateway's streamed answers). The stream ends after the `exited` update.
 *
 * The `ended` event carries the whole result in `task.result` even when it is big (then
 * `task.resultSummary` is set too), once: its `update.payload` is left out then. The follower is
 * the one front-end waiting for that result.
 */
export interface TaskFeedEvent {
  task: TaskSnapshot;
  update?: TaskUpdate;
}

/**
 * Error shape both bridges (and the control endpoint) use for a refused call: `{code, message, data?}`
 * with the code from the one table, src/model/errors.ts (`refused`: the run policy does not allow the
 * submitted command line from its door, docs/run-policy.md).
 */
export type BridgeErrorBody = ErrorBody;

declare global {
  interface Window {
    backchannel: BackchannelBridge;
  }
}
