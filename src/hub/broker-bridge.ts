/**
 * Turns a TaskBroker into the panel's `BackchannelBridge`. Electron-free: the headless HTTP server
 * and the Electron IPC handlers both serve this one object, so they answer every call the same way.
 *
 * Events go through an `UpdateCoalescer` (./update-coalescer.ts); the calls are below, each a few
 * lines over the broker, with broker errors translated into the bridge's error codes.
 */
import type {
  BackchannelBridge,
  BridgeInfo,
  SubmitRequest,
  TaskCounts,
  TaskDetails,
  TaskFeedEvent,
  PresetInfo,
} from '../bridge/contract.js';
import { BridgeError, fromCoreError } from '../model/errors.js';
import { specOfRequest } from '../model/spec-wire.js';
import type { Insights, InsightsQuery } from '../model/insights.js';
import type { FinalPayload } from '../protocol/index.js';
import type { CommandLine, LogLine, TaskPage, TaskPageQuery, TaskSnapshot, TaskSpec, TaskUpdate, ToolAnswer } from '../model/task.js';
import type { WorkerInfo } from '../model/fleet.js';
import type { ApplyOutcome, TaskChange, WorktreeRecord } from '../model/change.js';
import { FIRE_PAGE_SIZE } from '../model/limits.js';
import type { FireRecord, Schedule } from '../schedules/schedule.js';
import type { ScheduleRequest, ScheduleView } from '../schedules/views.js';
import { isFinished, MAX_TASK_PAGE_SIZE, TASK_PAGE_SIZE } from '../model/task.js';
import { ANNOTATIONS, checkWith } from '../bridge/checks.js';
import { distinctCommands } from './recent-commands.js';
import { UpdateCoalescer } from './update-coalescer.js';

/** A task the broker took: its id, its result, and when it is durable (see TaskHandle.accepted). */
export interface StartedTask {
  id: string;
  result: Promise<unknown>;
  accepted?: Promise<void>;
}

/** The part of `TaskBroker` the bridge uses (structural, so tests and adapters can provide it). */
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
  /** A coding task's change (throws a BrokerError('unknown_task') without one); absent: a broker keeping no worktrees. */
  change?(id: string): Promise<TaskChange>;
  applyChanges?(ids: readonly string[]): Promise<ApplyOutcome>;
  discardChange?(id: string): Promise<WorktreeRecord>;
  keepBranch?(id: string): Promise<WorktreeRecord>;
  worktreeList?(): WorktreeRecord[];
  on(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  on(event: 'paused', listener: (paused: boolean) => void): unknown;
  on(event: 'removed', listener: (taskIds: string[]) => void): unknown;
  off?(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  off?(event: 'paused', listener: (paused: boolean) => void): unknown;
  off?(event: 'removed', listener: (taskIds: string[]) => void): unknown;
}

export interface BrokerBridgeOptions {
  mode: BridgeInfo['mode'];
  version: string;
  logPath: string;
  /** What the panel's "New task" offers. @default [] */
  presets?: PresetInfo[];
  /**
   * Minimum time between two events: one frame (16 ms), so a change reaches the panel by its next
   * frame. @default 16
   */
  flushIntervalMs?: number;
  /**
   * Time between two events while the broker's event loop runs late (saturated): the panel then
   * gets ≤ 10 events a second however many tasks report. @default 100
   */
  busyFlushIntervalMs?: number;
  /** How many distinct recent command lines `info()` lists. @default 8 */
  recentLimit?: number;
  /** Electron opens the log in the OS; headless leaves it undefined and only returns the path. */
  openLog?: (path: string) => Promise<void>;
  /** Called when a listener throws (the bridge keeps going). */
  onListenerError?: (error: unknown) => void;
  /**
   * The hub's scheduler (./scheduler.ts), which the schedule calls read and change; absent (a broker
   * of a front-end's own, the history): every schedule call is refused with NO_SCHEDULER.
   */
  scheduler?: SchedulerLike;
}

/** The part of `HubScheduler` the bridge uses (structural, as `BrokerLike`). */
export interface SchedulerLike {
  list(): Schedule[];
  get(name: string): Schedule | undefined;
  /** A schedule's fire records, oldest first. */
  history(name: string): FireRecord[];
  /** The next fire time after the scheduler's now; undefined while paused or when it never fires again. */
  nextFireAt(name: string): number | undefined;
  activeRuns(name: string): number;
  /** Throws BrokerError `invalid_option` or `refused` with one line (nothing stored then). */
  add(input: Record<string, unknown>): Schedule;
  remove(name: string): boolean;
  setPaused(name: string, paused: boolean): Schedule;
  runNow(name: string): FireRecord;
}

/** The refusal of a schedule call where no scheduler runs. */
export const NO_SCHEDULER = 'schedules need a running hub: start `backchannel serve` or the desktop app';

export interface BrokerBridge extends BackchannelBridge {
  /**
   * Submits a task and calls `listener` with every change of it, not coalesced (see
   * `TaskFeedEvent`): first its picture, then each update with the picture after it, the last one
   * `exited`. `stop()` ends the listening, not the task. Throws like `submit`.
   */
  submitAndFollow(request: SubmitRequest, listener: (event: TaskFeedEvent) => void): { id: string; stop(): void };
  /**
   * Calls `listener` with every change of the existing task `id`, as `submitAndFollow` does: first its
   * picture, then each update. Throws a `not_found` BridgeError for an unknown id.
   */
  watch(id: string, listener: (event: TaskFeedEvent) => void): { stop(): void };
  /** Stops listening to the broker and drops every subscriber. Does not close the broker. */
  close(): void;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 16;
export const DEFAULT_BUSY_FLUSH_INTERVAL_MS = 100;

export function createBrokerBridge(broker: BrokerLike, options: BrokerBridgeOptions): BrokerBridge {
  const events = new UpdateCoalescer(broker, {
    flushIntervalMs: options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS,
    busyFlushIntervalMs: Math.max(options.busyFlushIntervalMs ?? DEFAULT_BUSY_FLUSH_INTERVAL_MS, options.flushIntervalMs ?? 0),
    onListenerError: options.onListenerError,
  });
  const detach = listenToBroker(broker, events);
  let closed = false;
  return {
    ...brokerCalls(broker, options),
    subscribe: (listener) => events.subscribe(listener),
    async setPaused(paused) {
      if (paused) broker.pause();
      else broker.resume();
      events.poke();
    },
    submitAndFollow: (request, listener) => followSubmission(broker, request, listener),
    watch: (id, listener) => watchTask(broker, id, listener),
    close() {
      if (closed) return;
      closed = true;
      events.close();
      detach();
    },
  };
}

function followSubmission(
  broker: BrokerLike,
  request: SubmitRequest,
  listener: (event: TaskFeedEvent) => void,
): { id: string; stop(): void } {
  // Listening starts before the submit: the broker reports `queued` (and may report more) inside it.
  const feed = taskFeed(broker, listener);
  let started: { id: string; accepted: Promise<void> };
  try {
    started = handleOf(() => broker.submit(toSpec(request)));
  } catch (error) {
    feed.stop();
    throw error;
  }
  // The follower learns of its task (its id, the first event) only once the task is durable: a
  // crash right after cannot lose a task its caller was told about. Updates meanwhile are held.
  let stopped = false;
  void started.accepted.then(() => stopped || feed.start(started.id));
  return {
    id: started.id,
    stop: () => {
      stopped = true;
      feed.stop();
    },
  };
}

function watchTask(broker: BrokerLike, id: string, listener: (event: TaskFeedEvent) => void): { stop(): void } {
  if (!broker.get(id)) throw new BridgeError('not_found', `No task with id ${id}`);
  const feed = taskFeed(broker, listener);
  feed.start(id);
  return { stop: feed.stop };
}

/**
 * One task's updates as `TaskFeedEvent`s: listening starts at once (updates of the task that come
 * before `start(id)` are held), `start` sends the task's picture, then the held updates, then each
 * new one as it comes.
 */
function taskFeed(broker: BrokerLike, listener: (event: TaskFeedEvent) => void): { start(id: string): string; stop(): void } {
  let id: string | undefined;
  const early: TaskUpdate[] = [];
  const send = (update?: TaskUpdate): void => {
    const task = broker.get(id!);
    if (!task) return;
    if (update?.kind === 'ended' && update.payload) {
      // The follower waits for this very result: it gets it whole (also a big one), once — in
      // `task.result`, not again as the update's payload.
      const result = task.result ?? (task.resultSummary ? (update.payload as FinalPayload) : undefined);
      if (result) return listener({ task: { ...task, result }, update: { ...update, payload: undefined } });
    }
    listener(update ? { task, update } : { task });
  };
  const onUpdate = (update: TaskUpdate): void => {
    if (id === undefined) early.push(update);
    else if (update.taskId === id) send(update);
  };
  const detach = broker.on('update', onUpdate);
  return {
    start(taskId) {
      id = taskId;
      send();
      for (const update of early.splice(0)) if (update.taskId === id) send(update);
      return taskId;
    },
    stop() {
      if (typeof detach === 'function') (detach as () => void)();
      else broker.off?.('update', onUpdate);
    },
  };
}

/** Feeds the broker's events to the coalescer; returns the function that stops it. */
function listenToBroker(broker: BrokerLike, events: UpdateCoalescer): () => void {
  const onUpdate = (update: TaskUpdate): void => events.taskChanged(update.taskId);
  // The flush notices the new `broker.paused` itself; this only makes sure a flush comes.
  const onPaused = (): void => events.poke();
  const onRemoved = (taskIds: string[]): void => events.tasksRemoved(taskIds);
  const detachUpdate = broker.on('update', onUpdate);
  broker.on('paused', onPaused);
  broker.on('removed', onRemoved);
  return () => {
    if (typeof detachUpdate === 'function') (detachUpdate as () => void)();
    else broker.off?.('update', onUpdate);
    broker.off?.('paused', onPaused);
    broker.off?.('removed', onRemoved);
  };
}

/** The request/reply calls except `setPaused` (which also wakes the coalescer), grouped by what they do. */
function brokerCalls(broker: BrokerLike, options: BrokerBridgeOptions): Omit<BackchannelBridge, 'subscribe' | 'setPaused'> {
  const requireTask = (id: string): TaskSnapshot => {
    const task = broker.get(id);
    if (!task) throw new BridgeError('not_found', `No task with id ${id}`);
    return task;
  };
  return {
    ...hostCalls(broker, options),
    ...readCalls(broker, requireTask),
    ...taskCalls(broker, requireTask),
    ...changeCalls(broker),
    ...scheduleCalls(broker, options.scheduler, options.presets ?? []),
  };
}

type RequireTask = (id: string) => TaskSnapshot;

/** The calls about the hub itself: what it is and offers, its log, its fleet and its figures. */
function hostCalls(broker: BrokerLike, options: BrokerBridgeOptions): Pick<BackchannelBridge, 'info' | 'openLog' | 'fleet' | 'insights'> {
  const recentLimit = options.recentLimit ?? 8;
  return {
    async info() {
      return {
        version: options.version,
        mode: options.mode,
        logPath: options.logPath,
        paused: broker.paused,
        presets: options.presets ?? [],
        recent: distinctCommands(newestCommandLines(broker), recentLimit),
        ...(broker.connections ? { connections: broker.connections() } : {}),
      };
    },
    async openLog() {
      await options.openLog?.(options.logPath);
      return { path: options.logPath };
    },
    async fleet() {
      return (await broker.fleet?.()) ?? [];
    },
    async insights(query) {
      if (!broker.insights) throw new BridgeError('internal', 'This broker keeps no insights');
      return broker.insights(query);
    },
  };
}

/** The calls that read tasks: lists, one task with its log, its whole result, an attachment. */
function readCalls(
  broker: BrokerLike,
  requireTask: RequireTask,
): Pick<BackchannelBridge, 'listTasks' | 'listTaskPage' | 'getTask' | 'taskResult' | 'attachment'> {
  return {
    async listTasks() {
      return broker.tasks();
    },
    async listTaskPage(query) {
      return broker.taskPage ? broker.taskPage(query) : pageOf(broker.tasks(), query);
    },
    async getTask(id): Promise<TaskDetails> {
      const task = requireTask(id);
      return { task, log: broker.logOf(id) };
    },
    async taskResult(id) {
      const task = requireTask(id);
      const whole = broker.result ? broker.result(id) : task.result;
      if (whole === undefined && task.resultSummary) throw new BridgeError('not_found', `Task ${id} is no longer in history`);
      return whole ?? null;
    },
    async attachment(id, name) {
      const task = requireTask(id);
      const header = (task.result?.attachments ?? task.resultSummary?.attachments)?.find((a) => a.name === name);
      const content = header && broker.attachment?.(id, name);
      if (!header || content === undefined) throw new BridgeError('not_found', `Task ${id} has no attachment ${name} (any more)`);
      const bytes =
        typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
      return { name, bytes: bytes.length, encoding: header.encoding ?? 'binary', base64: bytes.toString('base64') };
    },
  };
}

/** The calls that start or change a task, each refused with `conflict` when the task's state does not allow it. */
function taskCalls(
  broker: BrokerLike,
  requireTask: RequireTask,
): Pick<BackchannelBridge, 'submit' | 'cancel' | 'retry' | 'answer' | 'answerToolCall' | 'annotate'> {
  return {
    async submit(request) {
      // Acknowledged once durable (see followSubmission).
      const { id, accepted } = handleOf(() => broker.submit(toSpec(request)));
      await accepted;
      return { id };
    },
    async cancel(id, reason) {
      const task = requireTask(id);
      if (isFinished(task.state)) {
        throw new BridgeError('conflict', `Task ${id} already ended (${task.state}); there is nothing to cancel`);
      }
      if (!broker.cancel(id, reason)) throw new BridgeError('conflict', `Task ${id} could not be cancelled (${task.state})`);
    },
    async retry(id) {
      const task = requireTask(id);
      if (!isFinished(task.state)) {
        throw new BridgeError('conflict', `Task ${id} is still ${task.state}; retry it once it has ended`);
      }
      const started = handleOf(() => broker.retry(id));
      await started.accepted;
      return { id: started.id };
    },
    async answer(id, askId, text, via) {
      const task = requireTask(id);
      if (task.pendingQuestion?.askId !== askId) {
        throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
      }
      if (!broker.answer(id, askId, text, via)) throw new BridgeError('conflict', `Task ${id} no longer waits for "${askId}"`);
    },
    async answerToolCall(id, callId, answer) {
      requireTask(id);
      if (!broker.answerToolCall(id, callId, answer)) throw new BridgeError('conflict', noToolCall(id, callId));
    },
    async annotate(id, meta) {
      const task = requireTask(id);
      if (!broker.annotate) throw new BridgeError('conflict', `Task ${id} cannot be annotated here (a read-only history)`);
      if (!broker.annotate(id, checkWith(ANNOTATIONS, meta, 'meta'))) throw new BridgeError('conflict', notAnnotatable(id, task.state));
    },
  };
}

/** The calls on coding tasks' changes (docs/coding-agents.md), each one broker call with its errors translated. */
function changeCalls(
  broker: BrokerLike,
): Pick<BackchannelBridge, 'taskChange' | 'applyChanges' | 'discardChange' | 'keepBranch' | 'listWorktrees'> {
  const call = async <T>(run: ((broker: BrokerLike) => T | Promise<T>) | undefined): Promise<T> => {
    if (!run) throw new BridgeError('not_found', 'This hub keeps no worktrees');
    try {
      return await run(broker);
    } catch (error) {
      return translate(error);
    }
  };
  return {
    taskChange: (id) => call(broker.change && ((b) => b.change!(id))),
    applyChanges: (ids) => call(broker.applyChanges && ((b) => b.applyChanges!(ids))),
    discardChange: (id) => call(broker.discardChange && ((b) => b.discardChange!(id))),
    keepBranch: (id) => call(broker.keepBranch && ((b) => b.keepBranch!(id))),
    listWorktrees: () => call((b) => b.worktreeList?.() ?? []),
  };
}

type ScheduleCall = 'listSchedules' | 'getSchedule' | 'addSchedule' | 'setSchedulePaused' | 'removeSchedule' | 'runScheduleNow';

/** The calls on schedules (docs/schedules.md): each a call of the hub's scheduler, its errors through the one table. */
function scheduleCalls(
  broker: BrokerLike,
  scheduler: SchedulerLike | undefined,
  presets: readonly PresetInfo[],
): Pick<BackchannelBridge, ScheduleCall> {
  const on = async <T>(run: (scheduler: SchedulerLike) => T): Promise<T> => {
    if (!scheduler) throw new BridgeError('conflict', NO_SCHEDULER);
    try {
      return run(scheduler);
    } catch (error) {
      return translate(error);
    }
  };
  const known = (s: SchedulerLike, name: string): Schedule => {
    const schedule = s.get(name);
    if (!schedule) throw new BridgeError('not_found', `No schedule named "${name.slice(0, 80)}"`);
    return schedule;
  };
  const view = (s: SchedulerLike, schedule: Schedule, history = s.history(schedule.name)): ScheduleView => {
    const lastFire = history.at(-1);
    const lastRun = history.findLast((fire) => fire.outcome === 'ran');
    const lastRunState = lastRun?.taskId === undefined ? undefined : broker.get(lastRun.taskId)?.state;
    const nextFireAt = s.nextFireAt(schedule.name);
    return {
      schedule,
      ...(nextFireAt === undefined ? {} : { nextFireAt }),
      activeRuns: s.activeRuns(schedule.name),
      ...(lastFire ? { lastFire } : {}),
      ...(lastRun ? { lastRun } : {}),
      ...(lastRunState ? { lastRunState } : {}),
    };
  };
  return {
    listSchedules: () => on((s) => s.list().map((schedule) => view(s, schedule))),
    getSchedule: (name, query) =>
      on((s) => {
        const schedule = known(s, name);
        const history = s.history(name);
        // The cursor is a position in the schedule's records, which are only ever appended: stable.
        const before = Math.min(query?.before ?? history.length, history.length);
        const start = Math.max(0, before - (query?.limit ?? FIRE_PAGE_SIZE));
        return {
          ...view(s, schedule, history),
          fires: history.slice(start, before).reverse(),
          total: history.length,
          ...(start > 0 ? { next: start } : {}),
        };
      }),
    addSchedule: (request) => on((s) => view(s, s.add(withPresetCommand(request, presets)))),
    setSchedulePaused: (name, paused) =>
      on((s) => {
        known(s, name);
        return view(s, s.setPaused(name, paused));
      }),
    removeSchedule: (name) =>
      on((s) => {
        if (!s.remove(name)) throw new BridgeError('not_found', `No schedule named "${name.slice(0, 80)}"`);
      }),
    runScheduleNow: (name) =>
      on((s) => {
        known(s, name);
        return s.runNow(name);
      }),
  };
}

/**
 * A schedule request that names a preset, as the preset's command line (what a fire runs and the
 * run policy judges); an unknown preset is `invalid_request`, naming the hub's presets.
 */
function withPresetCommand(request: ScheduleRequest, presets: readonly PresetInfo[]): Record<string, unknown> {
  if (request.preset === undefined || request.command !== undefined) return request;
  const preset = presets.find((candidate) => candidate.name === request.preset);
  if (!preset) {
    const names = presets.map((candidate) => candidate.name).join(', ') || 'none';
    throw new BridgeError('invalid_request', `No preset named "${String(request.preset).slice(0, 80)}" on this hub (presets: ${names})`);
  }
  const { preset: _preset, ...rest } = request;
  // A named ACP agent's preset runs as an ACP task at every fire (docs/acp.md).
  const { acp, input } = preset.request;
  return {
    ...rest,
    command: [preset.request.command, ...(preset.request.args ?? [])],
    ...(acp ? { acp } : {}),
    ...(input !== undefined && rest.input === undefined ? { input } : {}),
  };
}

/** How many of the newest tasks `info()` looks through for recent command lines (five pages). */
const RECENT_SCAN = 5 * TASK_PAGE_SIZE;

/**
 * What the newest tasks ran, newest first, read only as far as `info`'s recent commands need: from
 * the broker in place where it can, else page by page (else from `tasks()`). A history of one
 * command line used to be walked whole, every snapshot copied, for each `info()` (3 s over 100,000
 * tasks, during which no panel painted); then five pages were copied (most of a busy hub's garbage).
 */
function* newestCommandLines(broker: BrokerLike): Iterable<CommandLine> {
  if (broker.newestCommandLines) return yield* broker.newestCommandLines(RECENT_SCAN);
  if (!broker.taskPage) return yield* [...broker.tasks()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  for (let before: string | undefined, seen = 0; seen < RECENT_SCAN;) {
    const page = broker.taskPage(before === undefined ? { limit: TASK_PAGE_SIZE } : { limit: TASK_PAGE_SIZE, before });
    yield* page.tasks;
    seen += page.tasks.length;
    if (page.next === undefined) return;
    before = page.next;
  }
}

/** A page of `tasks` (oldest first) for a broker without `taskPage`: newest first, cursor = the last task's id. */
function pageOf(tasks: TaskSnapshot[], query: TaskPageQuery): TaskPage {
  const limit = Math.min(query.limit ?? TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE);
  const states = query.state === undefined ? undefined : new Set(Array.isArray(query.state) ? query.state : [query.state]);
  const newest = tasks.filter((task) => !states || states.has(task.state)).reverse();
  const at = query.before === undefined ? -1 : newest.findIndex((task) => task.id === query.before);
  const start = at + 1;
  const slice = newest.slice(start, start + limit);
  const page: TaskPage = { tasks: slice, total: newest.length };
  if (start + limit < newest.length && slice.length > 0) page.next = slice.at(-1)!.id;
  return page;
}

/** The broker's spec for a request: its every field (spec-wire.ts); tagged as coming from the panel unless it says who sent it. */
function toSpec(request: SubmitRequest): TaskSpec {
  const spec = specOfRequest(request);
  spec.tags = { source: 'panel', ...request.tags };
  // A request that does not say which door it came through is judged as any other program's.
  spec.origin = request.origin ?? 'control';
  return spec;
}

/** Broker errors carry a code; the one table (`BROKER_ERROR_CODES`) says which bridge code each is. */
function translate(error: unknown): never {
  throw fromCoreError(error);
}

function handleOf(start: () => StartedTask): { id: string; accepted: Promise<void> } {
  let handle: StartedTask;
  try {
    handle = start();
  } catch (error) {
    translate(error);
  }
  // The outcome reaches the panel through updates; an unobserved rejection must not crash the host.
  handle.result.catch(() => {});
  return { id: handle.id, accepted: handle.accepted ?? Promise.resolve() };
}

/** The refusal of an answer to a call the task does not wait on (one wording for every backend). */
export function noToolCall(id: string, callId: string): string {
  return `Task ${id} is not waiting on a tool call with id "${callId.slice(0, 80)}"`;
}

/** Why a task cannot be annotated now (it has ended: its meta is written). */
export function notAnnotatable(id: string, state: string): string {
  return `Task ${id} has ended (${state}); annotate a task while it runs`;
}
