/**
 * TaskBroker: registers tasks, runs their attempts under a concurrency queue and guards, and settles
 * each task's `result` exactly once. Electron-free; the desktop shell, the CLI and the headless
 * server all drive this class.
 *
 * One task in memory is a LiveTask (./live-task.ts); its attempts run in ./attempt-loop.ts. What a
 * kind of task adds — a coding task's worktree, its change and its follow-ups (./coding/) — hooks in
 * through the seam of ./task-kinds.ts: planned at submit, prepared before the first attempt,
 * captured before the exit is reported. Its calls on changes are its own: `broker.coding`.
 */
import { EventEmitter } from 'node:events';
import path from 'node:path';
import PQueue from 'p-queue';
import { v7 as uuidv7 } from 'uuid';
import type { FinalPayload } from '../protocol/index.js';
import { normalizeRetry } from './guards/retry.js';
import { TokenBudget, tokensUsed } from './guards/token-budget.js';
import { withDoorBudget } from './guards/budget.js';
import { ensureDataDir } from './history/data-dir.js';
import { lockDataDir, type DataDirLock } from './history/data-dir-lock.js';
import { Journal } from './history/journal.js';
import { TaskRegistry, type Retention } from './history/registry.js';
import { storedSpec } from './history/records.js';
import { restoreHistory } from './history/recovery.js';
import type { RecoveringTasks } from './history/recovering.js';
import { ResultStore, type ResultFile } from './history/results.js';
import { silentLogger, type Logger } from './log.js';
import { filterEnv } from './process/environment.js';
import { attemptSettings, DEFAULTS, resolveOptions, type BrokerOptions, type ResolvedOptions } from './settings.js';
import { LOCAL_QUEUE, type AttemptQueue } from './queue/attempt-queue.js';
import { CallerWaits } from './queue/caller-waits.js';
import { cancelOnAbort, labelOf, validateSpec } from './task/spec.js';
import { admitted } from './admission.js';
import { runAttempts, type AttemptLoop } from './attempt-loop.js';
import { LiveTask, type TaskRecords } from './live-task.js';
import { Task } from './task/task.js';
import { BrokerError } from './errors.js';
import type { BrokerEvents, BrokerStats, CodingChanges, TaskHandle } from './types.js';
import { withSummary } from './history/results.js';
import type { WorkerInfo } from '../model/fleet.js';
import type { Insights, InsightsQuery } from '../model/insights.js';
import type { CommandLine, LogLine, TaskPage, TaskPageQuery, TaskSnapshot, TaskSpec, TaskUpdate, ToolAnswer } from '../model/task.js';
import { chooseEndpointDir, ensurePrivateDir, sweepStaleSockets } from './transport/endpoint.js';
import { connectionTally, type ConnectionTally } from './transport/connection-tally.js';
import { CodingTasks } from './coding/index.js';
import { AcpTasks } from './acp/index.js';
import { annotationProblem, mergeAnnotations, type Annotations } from '../model/annotations.js';
import { BridgeError } from '../model/errors.js';
import { planRuns, type KindContext, type TaskKind } from './task-kinds.js';

export { DEFAULTS, type BrokerOptions } from './settings.js';
export type { BrokerEvents, BrokerStats, CodingChanges, TaskHandle } from './types.js';

export class TaskBroker extends EventEmitter<BrokerEvents> {
  readonly endpointDir: string;
  readonly ready: Promise<void>;
  private readonly options: ResolvedOptions;
  private readonly logger: Logger;
  private readonly queue: PQueue;
  private readonly attempts: AttemptQueue; // where attempts run: here (default) or on a worker fleet
  private readonly loop: AttemptLoop;
  private readonly registry = new TaskRegistry<LiveTask>();
  /**
   * Sees every update before the listeners do. Called, not subscribed: with one caller listening,
   * `emit` then takes EventEmitter's one-listener path (no copy of the listener array per partial).
   */
  private readonly observeWaits: (update: TaskUpdate) => void;
  private readonly live = this.registry.live;
  private readonly journal: Journal | undefined;
  /** Big results of finished tasks, on disk beside the journal (only with a data directory). */
  private readonly results: ResultStore | undefined;
  /** The journal and the result store together, as each task writes to them. */
  private readonly records: TaskRecords;
  private readonly budget: TokenBudget | undefined;
  private readonly baseEnv: Record<string, string>;
  private readonly retention: Retention;
  private closing: Promise<void> | undefined;
  private spoolCheck: NodeJS.Timeout | undefined;
  /** Tasks of history whose agent outlived the last broker (see history/recovering.ts). */
  private recovering: RecoveringTasks | undefined;
  /**
   * Coding tasks (`TaskSpec.worktree`): their changes, worktrees and branches, served by the coding
   * kind itself (coding/): `broker.coding.change(id)`, `.apply(ids)`, `.discard(id)`, `.keepBranch(id)`,
   * `.list()`; `.worktrees` is undefined when the broker has no place for them.
   */
  readonly coding: CodingChanges;
  /** Every kind of task this broker knows, coding tasks first, in the order their steps run (see task-kinds.ts). */
  private readonly kinds: readonly TaskKind[];
  /** This broker's hold on its data directory: one broker per history (see history/data-dir-lock.ts). */
  private dataDirLock: DataDirLock | undefined;
  /** Why the broker could not start (endpoint directory refused, …): every task then fails with it. */
  private startError: string | undefined;

  constructor(options: BrokerOptions = {}) {
    super();
    this.setMaxListeners(0);
    this.options = resolveOptions(options);
    this.logger = options.logger ?? silentLogger;
    this.attempts = options.queue ?? LOCAL_QUEUE;
    this.queue = new PQueue({ concurrency: this.options.concurrency, autoStart: false });
    // A run waiting on its caller's tool result lends its slot while it waits (Y4; ./queue/caller-waits.ts).
    const waits = new CallerWaits(this.queue, this.options.concurrency, (id) => (this.get(id)?.pendingToolCalls?.length ?? 0) > 0);
    this.observeWaits = waits.observe;
    this.endpointDir = chooseEndpointDir(options.ipcDir);
    this.journal = options.dataDir ? new Journal(options.dataDir, this.logger) : undefined;
    this.results = options.dataDir ? new ResultStore(options.dataDir, (message) => this.warn(message)) : undefined;
    this.records = { journal: this.journal, results: this.results };
    this.budget = options.tokenBudget ? new TokenBudget(options.tokenBudget) : undefined;
    const context: KindContext = {
      task: (id) => this.live.get(id),
      logger: this.logger,
      warn: (message) => this.warn(message),
      result: (id) => this.registry.result(id, this.results),
    };
    const coding = new CodingTasks(this.options, context);
    this.coding = coding;
    // ACP tasks plan after coding tasks: a follow-up's parent is linked by then (docs/acp.md).
    this.kinds = [coding, new AcpTasks(options.acp ?? {}, context), ...(options.kinds?.(context) ?? [])];
    this.baseEnv = filterEnv(process.env, options.env);
    const place = { endpointDir: this.endpointDir, baseEnv: this.baseEnv };
    this.loop = {
      attempts: this.attempts,
      logger: this.logger,
      settings: (task, number) => attemptSettings(task, number, this.options, place),
      closing: () => this.closing !== undefined,
    };
    this.retention = { limit: this.options.historyLimit, maxAgeMs: this.options.historyMaxAgeMs };
    this.ready = this.init();
    // A broker that cannot start rejects every task, queued or yet to come; never an unhandled rejection.
    this.ready.catch((error: unknown) => this.failToStart(error));
  }

  private failToStart(error: unknown): void {
    this.startError = `could not start: ${(error as Error).message}`;
    this.logger.error(`the broker ${this.startError}`);
    void this.dataDirLock?.release();
    // Its endings wait for the journal's fsync (durable before reported): a journal never opened lets them go.
    this.journal?.abandon(this.startError);
    this.queue.clear();
    for (const entry of this.live.values()) entry.end(() => entry.task.fail('crashed', this.startError!));
  }

  private async init(): Promise<void> {
    // Before anything touches the data directory or the sockets: a held one fails here (data_dir_in_use).
    if (this.journal) this.dataDirLock = await lockDataDir(path.dirname(this.journal.file));
    ensurePrivateDir(this.endpointDir);
    const stale = await sweepStaleSockets(this.endpointDir);
    if (stale.length > 0) this.logger.info(`removed ${stale.length} stale socket file(s) from ${this.endpointDir}`);
    if (this.journal) {
      // Refused, not just unjournalled: forged history would be shown, and run again on Retry.
      ensureDataDir(path.dirname(this.journal.file));
      const emit = (update: TaskUpdate) => this.announce(update, () => this.registry.get(update.taskId));
      const warn = (message: string) => this.warn(message);
      const { history, rollup } = this.registry;
      const keep = (id: string) => this.live.get(id)?.resultSummary !== undefined;
      const results = this.results && { store: this.results, keep };
      const recovery = { dir: this.endpointDir, history, rollup, journal: this.journal, results, logger: this.logger, emit, warn };
      const { orphanGraceMs, killGraceMs } = this.options;
      const timing = { retention: this.retention, checkMs: DEFAULTS.spoolCheckMs, orphanGraceMs, killGraceMs };
      ({ spoolCheck: this.spoolCheck, recovering: this.recovering } = await restoreHistory(recovery, timing));
    }
    for (const kind of this.kinds) kind.start?.();
    this.queue.start();
  }

  /** Registers a task and queues it. Returns at once; the endpoint opens when the task starts. */
  submit(spec: TaskSpec): TaskHandle {
    if (this.closing) throw new BrokerError('closed', 'The broker is closed; create a new TaskBroker to run more tasks.');
    validateSpec(spec);
    spec = withDoorBudget(admitted(spec, this.options.runPolicy, this.logger), this.options.budgets);
    // Refused before the disk is full, not reported as done and lost (X12).
    const full = this.journal?.roomProblem();
    if (full) throw new BrokerError('data_dir', full);
    const id = uuidv7();
    const policy = normalizeRetry(spec.retries ?? this.options.defaults?.retries);
    const cwd = path.resolve(spec.cwd ?? process.cwd());
    const planned = planRuns(this.kinds, id, spec, cwd);
    spec = planned.spec;
    const identity = { id, spec, label: labelOf(spec), cwd, maxAttempts: policy.max + 1 };
    // Each update carries its task's picture, made only when a listener asks (one task's feed does).
    let live: LiveTask | undefined;
    const picture = (): TaskSnapshot => (live ? pictureOf(live) : task.snapshot());
    const task = new Task(identity, this.options.maxLogLines, (update) => this.announce(update, picture));
    const askMs = task.spec.askTimeoutMs ?? this.options.askTimeoutMs;
    const entry = (live = new LiveTask(task, policy, planned.runs, askMs, this.records, this.options.clock));
    this.live.set(id, entry);
    if (this.journal) {
      this.journal.append({ e: 'queued', id, at: task.createdAt, spec: storedSpec(task), maxAttempts: task.maxAttempts });
      entry.accepted = this.journal.durable();
    }
    task.queued();
    if (this.startError) {
      entry.end(() => task.fail('crashed', this.startError!));
      return entry.handle((reason) => this.cancel(id, reason));
    }
    if (spec.signal) cancelOnAbort(spec.signal, task.result, (reason) => this.cancel(id, reason));
    this.queue
      .add(() => this.run(entry))
      .catch((error: unknown) => {
        this.logger.error(`task ${id}: unexpected broker error`, error);
        task.fail('crashed', `failed inside the broker: ${(error as Error).message}`);
        entry.markFinished();
      });
    return entry.handle((reason) => this.cancel(id, reason));
  }

  /**
   * Every task the broker knows, live and from history, oldest first. A result kept on disk is a
   * `resultSummary` here (see `result`).
   */
  tasks(): TaskSnapshot[] {
    return this.registry.tasks();
  }

  /** One page of tasks, newest first (see TaskPageQuery). */
  taskPage(query?: TaskPageQuery): TaskPage {
    return this.registry.page(query);
  }

  /** What the newest `scan` tasks ran, newest first, without copying them (see TaskRegistry). */
  newestCommandLines(scan: number): Iterable<CommandLine> {
    return this.registry.newestCommandLines(scan);
  }

  get(id: string): TaskSnapshot | undefined {
    return this.registry.get(id);
  }

  /**
   * The whole final payload of a task (attachments as headers), also when its snapshot carries only
   * a summary: read from disk then. `null` when the task has no result (yet, or the file is gone);
   * undefined for an unknown task.
   */
  result(id: string): FinalPayload | null | undefined {
    return this.registry.result(id, this.results);
  }

  /**
   * The file of a task's whole result when `result` would read it from disk, opened to be sent as it
   * is (the caller closes it); null when that file is missing or refused; undefined otherwise.
   */
  resultFile(id: string): ResultFile | null | undefined {
    return this.registry.resultFile(id, this.results);
  }

  logOf(id: string): LogLine[] {
    return this.registry.logOf(id);
  }

  /** An attachment of a final payload, while the task is in memory (live, or finished in this broker); not in history. */
  attachment(id: string, name: string): string | Uint8Array | undefined {
    return this.registry.attachment(id, name);
  }

  stats(): BrokerStats {
    return { ...this.registry.stats(this.paused), connections: connectionTally() };
  }

  /** What this process's task endpoints refused or failed to accept, since it started. */
  connections(): ConnectionTally {
    return connectionTally();
  }

  /** Duration, outcome and token figures of finished tasks (including those that left history). */
  insights(query: InsightsQuery = {}): Insights {
    const budget = this.options.tokenBudget;
    return { ...this.registry.insights(query), ...(budget ? { budget: { ...budget } } : {}) };
  }

  /** Cancels a queued or running task. Returns false when it is unknown or already finished. */
  cancel(id: string, reason = 'cancelled by the user'): boolean {
    const entry = this.live.get(id);
    if (!entry) return this.recovering?.cancel(id, reason) ?? false;
    if (entry.task.decided) return false;
    entry.cancelRequested ??= reason;
    const { task } = entry;
    if (entry.attempt && task.state === 'running') {
      entry.attempt.stop('cancelled', reason);
    } else {
      // Queued, or waiting between attempts: nothing is running, so it ends now.
      entry.wake();
      entry.endCancelled(reason);
    }
    return true;
  }

  /** Runs a finished task again, as a new task with the same spec. */
  retry(id: string): TaskHandle {
    return this.submit(this.registry.specToRetry(id));
  }

  /**
   * Answers a sub-agent's pending question. Returns false when there is none with that id; throws an
   * `invalid_request` BridgeError, naming the choices, for an answer that is not one of them.
   */
  answer(id: string, askId: string, answer: string, via?: string): boolean {
    return this.live.get(id)?.question.answer(askId, answer, via) ?? false;
  }

  /**
   * Answers a sub-agent's pending call to a tool its caller hosts (`TaskSpec.tools`) with the tool's
   * content or an error. Returns false when the task does not wait on a call with that id.
   */
  answerToolCall(id: string, callId: string, answer: ToolAnswer): boolean {
    return this.live.get(id)?.toolCalls.answer(callId, answer) ?? false;
  }

  /**
   * Merges `annotations` (checked with model/annotations.ts's ANNOTATIONS) into a task's, at the top
   * level; they reach its final payload's meta and its snapshot. Returns false when the task is not
   * live or already decided (its meta is written); throws an `invalid_request` BridgeError when the
   * merged whole would exceed the bounds.
   */
  annotate(id: string, annotations: Annotations): boolean {
    const task = this.live.get(id)?.task;
    if (!task || task.decided) return false;
    const problem = annotationProblem(mergeAnnotations(task.annotated, annotations), 'meta');
    if (problem) throw new BridgeError('invalid_request', `${problem} (with what the task has already)`);
    return task.annotate(annotations);
  }

  get paused(): boolean {
    return this.queue.isPaused;
  }

  /** Holds queued tasks (running ones go on). */
  pause(): void {
    this.queue.pause();
    this.emit('paused', true);
  }

  resume(): void {
    this.queue.start();
    this.emit('paused', false);
  }

  /** Resolves when no task is queued or running and every process and endpoint is gone. */
  async onIdle(): Promise<void> {
    await this.ready;
    for (;;) {
      const pending = [...this.live.values()].filter((e) => !e.task.finished || e.attempt).map((e) => e.finished);
      if (pending.length === 0 && this.queue.size === 0 && this.queue.pending === 0) return;
      await Promise.all(pending);
      await this.queue.onIdle();
    }
  }

  /** The workers serving the queue (none for the local queue). */
  fleet(): Promise<WorkerInfo[]> {
    return this.attempts.fleet();
  }

  /** Why the history journal cannot be written, if it cannot. */
  get historyError(): string | undefined {
    return this.journal?.error;
  }

  /** Cancels everything, waits for processes to go, removes endpoints, flushes history. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.ready.catch(() => {});
      clearInterval(this.spoolCheck);
      this.recovering?.close();
      const kindsClosed = this.kinds.map((kind) => kind.close?.());
      this.queue.clear();
      for (const entry of this.live.values()) {
        if (!entry.task.finished) this.cancel(entry.task.id, 'the broker is shutting down');
      }
      await Promise.all([...this.live.values()].map((e) => e.finished));
      await Promise.all(kindsClosed);
      this.queue.pause();
      await this.attempts.close();
      this.registry.rollup.flush();
      await this.journal?.close();
      await this.dataDirLock?.release();
    })();
    return this.closing;
  }

  /** Runs a task off the queue: its attempts inside its token budget; then it leaves memory for history. */
  private async run(entry: LiveTask): Promise<void> {
    const { task } = entry;
    // A task that ended before it ran (cancelled while queued) leaves memory for history all the same.
    if (!task.decided) {
      const estimate = task.spec.estimatedTokens ?? 0;
      if (this.budget && estimate > 0) await this.budget.acquire(estimate);
      await runAttempts(entry, this.loop);
      if (this.budget && estimate > 0) this.budget.settle(estimate, tokensUsed(task.decidedFinal?.meta?.token_usage) ?? estimate);
    }
    // Leaves memory as it is shown: once its ending is durable and published.
    await entry.published;
    entry.retire(this.registry);
    this.evict();
    entry.markFinished();
  }

  /** Finished tasks beyond the history limit leave memory, and their result files the disk. */
  private evict(): void {
    const evicted = this.registry.evictOldFinished(this.retention);
    if (evicted.length === 0) return;
    for (const id of evicted) this.results?.remove(id);
    this.emit('removed', evicted);
  }

  /** One update of a task: the caller-waits bookkeeping, then the `update` listeners (with the task's picture, made on demand). */
  private announce(update: TaskUpdate, picture: () => TaskSnapshot | undefined): void {
    this.observeWaits(update);
    this.emit('update', update, picture);
  }

  private warn(message: string): void {
    this.logger.warn(message);
    this.emit('warning', message);
  }
}

/** A live task's picture, as `get(id)` shows it: a result kept on disk as its summary. */
function pictureOf(entry: LiveTask): TaskSnapshot {
  const snapshot = entry.task.snapshot();
  return entry.resultSummary ? withSummary(snapshot, entry.resultSummary) : snapshot;
}
