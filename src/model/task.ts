import type { ApprovalContext, Attachment, FinalPayload, Payload, PayloadMeta } from '../protocol/index.js';
import type { ChangeSummary, WorktreeInfo } from './change.js';
import type { TaskOrigin } from './origins.js';
import type { TaskRequest } from './task-request.js';
import type { PendingToolCall } from './tools.js';
import type { TaskBudget, TaskUsage } from './usage.js';

export type { PendingToolCall, ToolAnswer, ToolDefinition } from './tools.js';

/**
 * Lifecycle: queued → running → (retrying → running)* → succeeded | failed | cancelled.
 * `interrupted` is only ever read back from history: the broker died while the task ran.
 */
export type TaskState = 'queued' | 'running' | 'retrying' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted';

/** Every state, in lifecycle order (for validating a state sent from outside). */
export const TASK_STATES: readonly TaskState[] = ['queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled', 'interrupted'];

/** The states a task never leaves: "finished" is defined here and nowhere else. */
export const FINISHED_STATES: readonly TaskState[] = ['succeeded', 'failed', 'cancelled', 'interrupted'];

/** True for a state the task never leaves (succeeded, failed, cancelled, interrupted). */
export function isFinished(state: TaskState): boolean {
  return FINISHED_STATES.includes(state);
}

/**
 * Why a task did not succeed; recorded once. `refused`: the run policy (docs/run-policy.md) or a
 * worker's allow-list did not allow its command line, so nothing ran. `budget_exceeded`: the agent
 * reported spending more than the task's budget (`maxTokens`, `maxCostUsd`, `maxTurns`), so the
 * broker stopped it; never retried.
 */
export type FailureReason = 'error' | 'timeout' | 'stalled' | 'cancelled' | 'crashed' | 'protocol' | 'refused' | 'budget_exceeded';

export { TASK_ORIGINS, type TaskOrigin } from './origins.js';

/**
 * The reasons for which the broker itself stops a running agent (its deadline, its watchdog, its
 * budget, a cancel): the agent's work so far is then kept with the failure (`PartialResult`).
 */
export const STOP_REASONS = ['timeout', 'stalled', 'budget_exceeded', 'cancelled'] as const satisfies readonly FailureReason[];

/**
 * What a task the broker stopped (a reason of STOP_REASONS) had produced by then: never thrown away
 * with its failure. Read from the task's snapshot with `partialResultOf` (model/states.ts), the one
 * way; the CLI (`run`, `wait`, `show`), MCP, the gateway and the panel show it as `partial_result`.
 * Absent when the agent had produced nothing (no partial, no answer, no change).
 */
export interface PartialResult {
  /** `data` of the last partial payload the agent sent before it ended. */
  data?: unknown;
  /** Its last `data.progress` (0–100). */
  progress?: number;
  /**
   * What the agent sent as it stopped (its final payload in answer to the broker's `cancel`,
   * docs/protocol.md §5): its status and `data`. The whole payload is the task's `result`.
   */
  answer?: { status: FinalPayload['status']; data?: unknown };
  /** The attachments of that answer (headers; their content comes with the task's result, as a success's). */
  attachments?: Attachment[];
  /** A coding task's change in its worktree, as far as the agent got (`TaskSnapshot.change`). */
  change?: ChangeSummary;
}

/** Which path delivered the final payload. */
export type DeliveryChannel = 'socket' | 'stdout' | 'spool' | 'broker';

export interface RetryPolicy {
  /** Extra attempts after the first. @default 0 */
  max: number;
  /** Delay before the first retry. @default 1000 */
  backoffMs: number;
  /** Multiplier per further retry. @default 2 */
  factor: number;
  /** Upper bound for one delay. @default 100 × backoffMs (Temporal's default ratio) */
  maxBackoffMs?: number;
}

/**
 * What the broker runs. Its wire fields are the task request's (`TaskRequest`, declared once in
 * ./task-request.ts: command, args, cwd, label, input, timeoutMs, heartbeatTimeoutMs, askTimeoutMs,
 * tags, taskIdArg, worktree, parent, …), and a new request option is one here too. Below: the
 * fields that differ in process (copied by ./spec-wire.ts) and those only a process has.
 */
export interface TaskSpec extends Omit<TaskRequest, 'env' | 'callerEnv' | 'retries' | 'origin'> {
  /** Extra environment for the sub-agent, on top of the broker's filtered environment; `undefined` removes a name. */
  env?: Record<string, string | undefined>;
  /**
   * The environment the sub-agent starts from instead of the broker's own, filtered by the broker's
   * env policy in the same way (a terminal's `run` on the hub sends its own: the request's
   * `callerEnv`). Never journaled, listed, logged or shown: only the attempt's process sees it.
   */
  baseEnv?: Record<string, string>;
  /** Retry policy, or just the number of retries. */
  retries?: Partial<RetryPolicy> | number;
  /** The door it came through; the run policy judges every origin but `cli`. @default trusted (the caller's own program) */
  origin?: TaskOrigin;
  /** Aborting cancels the task. */
  signal?: AbortSignal;
  /** Token-budget estimate acquired before start (only with a broker `tokenBudget`). */
  estimatedTokens?: number;
  /**
   * The template or preset this command line is (set by the broker from the run policy's match): a
   * fleet worker runs its own copy of it by this name, never a command line from the queue.
   */
  preset?: string;
}

/** The tag `serve --demo` (the first `npm start`) puts on its demo tasks: `{demo: 'true'}`. */
export const DEMO_TAG = 'demo';

/** A demo task: shown in the panel and `tasks` as any other, never counted in `stats` or Insights. */
export function isDemoTask(task: { tags?: Record<string, string> }): boolean {
  return task.tags?.[DEMO_TAG] === 'true';
}

export interface LogLine {
  /** ISO 8601. */
  time: string;
  stream: 'stdout' | 'stderr' | 'broker';
  /** For people: the agent's output line, or the broker's note in words (stable; docs and tests quote it). */
  text: string;
  /**
   * For programs: what a broker note is, and its facts. Read this, never `text`. Absent on the
   * agent's own output, on notes that are only for people, and on lines from brokers before 0.3.
   */
  event?: LogEvent;
}

/** A line the broker could not use: it did not parse or break the rules, was refused, or came after the final payload. */
export type ProblemKind = 'malformed' | 'rejected' | 'ignored';

/**
 * Why a line or a connection was rejected: `auth` (no token, a wrong one, no first line in time),
 * `task-id` (a message for another task), `limit` (too many connections, an unauthenticated line
 * too long). Absent for other refusals (a first line that did not parse, an endpoint error).
 */
export type RejectCause = 'auth' | 'task-id' | 'limit';

/** The broker's own notes in a task's log, as data (see `LogLine.event`). */
export type LogEvent =
  /** A line arrived (logged only with `traceLines`; the text holds its first 100 characters, token redacted). */
  | { kind: 'received'; via: 'socket' | 'stdout' }
  /** A line the broker could not use (counted in `counters`); `status` is an ignored payload's status. */
  | { kind: 'problem'; problem: ProblemKind; detail: string; cause?: RejectCause; status?: Payload['status'] }
  /** The attempt broke the protocol (a line over the limit, bytes it could not frame); it fails with reason `protocol`. */
  | { kind: 'protocol-error'; detail: string }
  /** The broker stops the attempt: cancel, then SIGTERM, then SIGKILL. */
  | { kind: 'stopping'; reason: 'timeout' | 'stalled' | 'cancelled' | 'budget_exceeded' }
  /** After a stop, the agent sent its `cancelled` payload. */
  | { kind: 'cancel-confirmed' }
  /** After a stop, the agent answered with `success` or `error` (it had finished): kept with the failure. */
  | { kind: 'stop-answered'; status: Payload['status'] }
  /** The agent's process group outlived it and was killed. */
  | { kind: 'leftover-processes' }
  /** The attempt failed and attempt `attempt + 1` starts after `delayMs`. */
  | { kind: 'retrying'; attempt: number; delayMs: number }
  /** The attempt runs on a fleet worker. */
  | { kind: 'placed'; worker: string };

export interface PendingQuestion {
  askId: string;
  question: string;
  choices?: string[];
  askedAt: string;
  /** A coding task's question says where it stands: its branch and the files it has changed so far. */
  worktree?: { branch: string; files: string[] };
  /** An approval: the tool call an ACP agent asks permission for, and its options (docs/acp.md). */
  approval?: ApprovalContext;
}

/** What a task ran, as `info()`'s recent commands list it: read in place, never a copy of the snapshot. */
export type CommandLine = Readonly<Pick<TaskSnapshot, 'command' | 'args' | 'cwd' | 'label'>>;

/** A plain, JSON-safe picture of one task (what the panel and the CLI show). */
export interface TaskSnapshot {
  id: string;
  label: string;
  state: TaskState;
  reason?: FailureReason;
  /** One-line explanation of a failure, for people (e.g. "failed: rate limited", "timed out after 500 ms"). */
  message?: string;
  /**
   * The failure's own words without the framing `reason` already says: the agent's message for
   * `error` (`message` is "failed: <detail>"), what broke the protocol for `protocol` ("protocol
   * error: <detail>"). Absent for the other reasons, whose message is plain, and in history written
   * before 0.3 (show `message` then).
   */
  detail?: string;
  command: string;
  args: string[];
  cwd: string;
  /** Current (or last) attempt, from 1. */
  attempt: number;
  maxAttempts: number;
  /** Last `data.progress` (0–100) from a partial payload. */
  progress?: number;
  /** `data` of the last partial payload. */
  lastPartial?: unknown;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  /**
   * The final payload (success, error or cancelled), with the broker's meta added (attachments as
   * headers only). Absent when the result is big and kept on disk: then `resultSummary` is set and
   * the whole payload is fetched on demand (`taskResult` on the bridge).
   */
  result?: FinalPayload;
  /**
   * Set instead of `result` when the final payload is bigger than RESULT_INLINE_MAX_BYTES and the
   * broker keeps history (a data directory): the payload is on disk, written once, and snapshots,
   * task lists and the panel's events carry only this. Never set together with `result` in a
   * snapshot from the broker (the follow feed's `ended` event is the one exception, see TaskFeedEvent).
   */
  resultSummary?: ResultSummary;
  /** Last lines of stderr (for failures). */
  stderrTail?: string;
  exitCode?: number | null;
  signal?: string | null;
  pid?: number;
  /** The fleet worker that runs (or ran) the current attempt, when tasks go through a remote queue. */
  worker?: string;
  /**
   * Set while the task is `running` only because its agent outlived the hub's restart (pid `pid`):
   * it ends once that agent is gone, with the result it spooled (docs/reliability.md, "A task list
   * that survives a restart"). It cannot be retried meanwhile.
   */
  recovering?: boolean;
  pendingQuestion?: PendingQuestion;
  /**
   * Calls of the agent to tools its caller hosts, waiting for the caller's answer (several may wait at
   * once), oldest first; absent when none waits. The task shows `waiting for <tool>` meanwhile.
   */
  pendingToolCalls?: PendingToolCall[];
  tags?: Record<string, string>;
  /** The worktree the task runs in (a coding task, `TaskSpec.worktree`), once it was made. */
  worktree?: WorktreeInfo;
  /** What the agent changed there, recorded once its processes are gone (the whole diff: `taskChange`). */
  change?: ChangeSummary;
  /** The task this one follows up (one thread, one worktree). */
  parent?: string;
  /**
   * What the task's caller annotated while it ran (`TaskRun.annotate`, model/annotations.ts), e.g.
   * the gateway's `bridge_guard` counts; also merged into the final payload's meta, when it has one.
   */
  annotations?: Record<string, unknown>;
  /** Lines that were malformed, rejected (auth/task id) or ignored (after the final payload). */
  counters: { malformed: number; rejected: number; ignored: number };
  /** What the agent reported spending so far, all attempts together (../model/usage.ts); live while it runs. */
  usage?: TaskUsage;
  /** The most the task may spend (its `maxTokens`, `maxCostUsd`, `maxTurns`), when it has a budget. */
  budget?: TaskBudget;
}

/**
 * Final payloads bigger than this (serialized as JSON, UTF-8 bytes) are kept on disk, not in
 * snapshots. 64 KiB holds an ordinary answer (pages of text, a diff) so most results stay inline and
 * most consumers never see a summary; above it a result is a data dump whose copies in memory, in
 * every task list and in every panel event cost far more than fetching it once when someone looks:
 * 1,000 tasks of 10 MB were 10 GB of hub memory.
 */
export const RESULT_INLINE_MAX_BYTES = 64 * 1024;

/** Characters of a big result's `data` (as JSON) kept in its summary: enough to recognize it in a list. */
export const RESULT_PREVIEW_CHARS = 400;

/** A task's meta in a summary only up to this size (serialized); bigger meta is left to the whole result. */
export const RESULT_SUMMARY_MAX_META_BYTES = 8 * 1024;

/** What a snapshot carries of a big final payload (see `TaskSnapshot.resultSummary`). */
export interface ResultSummary {
  /** Size of the whole final payload serialized as JSON, in UTF-8 bytes (attachments as headers). */
  bytes: number;
  /** The first RESULT_PREVIEW_CHARS characters of `JSON.stringify(result.data)`. */
  preview: string;
  /** The payload's `status`. */
  status: FinalPayload['status'];
  /** The payload's meta with the broker's (model, tokens, channel, …), when small (RESULT_SUMMARY_MAX_META_BYTES). */
  meta?: FinalPayload['meta'];
  /** Attachment headers (name, bytes, encoding), as `result.attachments` would carry them. */
  attachments?: Attachment[];
}

/** The final payload's meta, whether the result is inline or summarized. */
export function resultMetaOf(task: Pick<TaskSnapshot, 'result' | 'resultSummary'>): FinalPayload['meta'] | undefined {
  return task.result?.meta ?? task.resultSummary?.meta;
}

/**
 * Task lists are paged (`listTaskPage`): this many tasks per page unless the query says otherwise.
 * 200 fills a panel screen several times and keeps a page of summaries well under a megabyte.
 */
export const TASK_PAGE_SIZE = 200;
/** The largest page a query may ask for. */
export const MAX_TASK_PAGE_SIZE = 1000;

/** A query for one page of tasks, newest first. */
export interface TaskPageQuery {
  /** Tasks per page. @default TASK_PAGE_SIZE (at most MAX_TASK_PAGE_SIZE) */
  limit?: number;
  /** Only tasks older than this: a task id, or the `next` cursor of the previous page. */
  before?: string;
  /** Only tasks in this state (or these states). */
  state?: TaskState | TaskState[];
}

/** One page of tasks, newest first. */
export interface TaskPage {
  tasks: TaskSnapshot[];
  /** Pass as `before` for the next (older) page; absent on the last page. Opaque. */
  next?: string;
  /** How many tasks match the query's state filter, in all pages. */
  total: number;
}

/**
 * `ended`: the task is decided (its result promise has settled). `exited`: afterwards, its processes
 * are gone and its endpoints removed; the snapshot now has the exit code and no pid.
 */
export type TaskUpdateKind =
  'queued' | 'started' | 'partial' | 'retrying' | 'ended' | 'exited' | 'ask' | 'answered' | 'tool_call' | 'tool_result' | 'log';

/** Emitted on every change; small on purpose (a chatty agent sends hundreds of thousands). */
export interface TaskUpdate {
  taskId: string;
  kind: TaskUpdateKind;
  state: TaskState;
  attempt: number;
  progress?: number;
  /** The partial or final payload that caused this update. */
  payload?: Payload;
  /** For `log` updates. */
  line?: LogLine;
  /**
   * On `tool_call` updates: the call now waiting for the caller's answer; on `tool_result` updates:
   * the call that was answered (or given up) and waits no more.
   */
  toolCall?: PendingToolCall;
}

/** Meta fields the broker adds to every final payload it hands out. */
export interface BrokerMeta extends PayloadMeta {
  attempts: number;
  channel: DeliveryChannel;
  exit_code?: number | null;
  received_at: string;
}

/** The fields of `BrokerMeta` the broker adds (or overwrites) in a final payload's `meta`. */
export const BROKER_META_KEYS = ['attempts', 'channel', 'exit_code', 'received_at'] as const satisfies ReadonlyArray<keyof BrokerMeta>;
