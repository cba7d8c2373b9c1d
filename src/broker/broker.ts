/**
 * TaskBroker: registers tasks, runs their attempts under a concurrency queue and guards, and settles
 * each task's `result` exactly once. Electron-free; the desktop shell, the CLI and the headless
 * server all drive this class.
 */
import { EventEmitter } from 'node:events';
import path from 'node:path';
import PQueue from 'p-queue';
import { v7 as uuidv7 } from 'uuid';
import { isoNow, withoutContent, type FinalPayload } from '../protocol/index.js';
import { backoffDelay, normalizeRetry } from './guards/retry.js';
import { TokenBudget, tokensUsed } from './guards/token-budget.js';
import { ensureDataDir } from './history/data-dir.js';
import { lockDataDir, type DataDirLock } from './history/data-dir-lock.js';
import { Journal } from './history/journal.js';
import { TaskRegistry, type Retention } from './history/registry.js';
import { progressRecord, retrySpec, storedSpec } from './history/records.js';
import { restoreHistory } from './history/recovery.js';
import { ResultStore, withSummary } from './history/results.js';
import { silentLogger, type Logger } from './log.js';
import { filterEnv } from './process/environment.js';
import { processStartTime } from './process/start-time.js';
import { attemptSettings, DEFAULTS, resolveOptions, type BrokerOptions, type ResolvedOptions } from './settings.js';
import type { AttemptOutcome } from './task/attempt.js';
import { LOCAL_QUEUE, type AttemptQueue, type RunningAttempt } from './queue/attempt-queue.js';
import { decide, settle } from './task/decision.js';
import { PendingQuestion } from './task/questions.js';
import { cancelOnAbort, labelOf, validateSpec } from './task/spec.js';
import { admitted } from './admission.js';
import { attemptSink } from './task/sink.js';
import { Task } from './task/task.js';
import { BrokerError } from './errors.js';
import type { BrokerEvents, BrokerStats, TaskHandle } from './types.js';
import type { WorkerInfo } from '../model/fleet.js';
import type { Insights, InsightsQuery } from '../model/insights.js';
import type { LogLine, ResultSummary, RetryPolicy, TaskPage, TaskPageQuery, TaskSnapshot, TaskSpec, TaskUpdate } from '../model/task.js';
import { chooseEndpointDir, ensurePrivateDir, sweepStaleSockets } from './transport/endpoint.js';
import { CodingTasks, type Worktrees } from './coding/index.js';
import type { ApplyOutcome, TaskChange, WorktreeRecord } from '../model/change.js';
import { askContext, attemptCwd, captureRuns, planRuns, prepareRuns, type KindStep, type TaskKind, type TaskRun } from './task-kinds.js';

export { DEFAULTS, type BrokerOptions } from './settings.js';
export type { BrokerEvents, BrokerStats, TaskHandle } from './types.js';

interface LiveTask {
  task: Task;
  policy: RetryPolicy;
  question: PendingQuestion;
  attempt?: RunningAttempt;
  finished: Promise<void>;
  markFinished: () => void;
  cancelRequested?: string;
  backoff?: { timer: NodeJS.Timeout; wake: () => void };
  lastProgressJournal: number;
  /** Set when the final payload went to disk (see ResultStore): snapshots carry this instead. */
  resultSummary?: ResultSummary;
  /** What the task's kinds add to it (planned at submit; see task-kinds.ts). */
  runs: TaskRun[];
  /** Set once the runs' capture step began: it runs once per task. */
  captured?: boolean;
}

export class TaskBroker extends EventEmitter<BrokerEvents> {
  readonly endpointDir: string;
  readonly ready: Promise<void>;
  private readonly options: ResolvedOptions;
  private readonly logger: Logger;
  private readonly queue: PQueue;
  private readonly attempts: AttemptQueue; // where attempts run: here (default) or on a worker fleet
  private readonly registry = new TaskRegistry<LiveTask>();
  private readonly live = this.registry.live;
  private readonly journal: Journal | undefined;
  /** Big results of finished tasks, on disk beside the journal (only with a data directory). */
  private readonly results: ResultStore | undefined;
  private readonly budget: TokenBudget | undefined;
  private readonly baseEnv: Record<string, string>;
  private readonly retention: Retention;
  private closing: Promise<void> | undefined;
  private spoolCheck: NodeJS.Timeout | undefined;
  /** Coding tasks (`TaskSpec.worktree`): their worktrees, changes and follow-ups (coding/). */
  private readonly coding: CodingTasks;
  /** Every kind of task this broker knows, in the order their steps run (see task-kinds.ts). */
  private readonly kinds: readonly TaskKind[];
  /** Coding tasks' worktrees (`TaskSpec.worktree`), when the broker has a place for them. */
  readonly worktrees: Worktrees | undefined;
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
    this.endpointDir = chooseEndpointDir(options.ipcDir);
    this.journal = options.dataDir ? new Journal(options.dataDir, this.logger) : undefined;
    this.results = options.dataDir ? new ResultStore(options.dataDir, (message) => this.warn(message)) : undefined;
    this.budget = options.tokenBudget ? new TokenBudget(options.tokenBudget) : undefined;
    const worktreeDir = options.worktreeDir ?? (options.dataDir ? path.join(options.dataDir, 'worktrees') : undefined);
    const context = { task: (id: string) => this.live.get(id), logger: this.logger, warn: (message: string) => this.warn(message) };
    this.coding = new CodingTasks({ dir: worktreeDir, maxAgeMs: this.options.worktreeMaxAgeMs }, context);
    this.kinds = [this.coding];
    this.worktrees = this.coding.worktrees;
    this.baseEnv = filterEnv(process.env, options.env);
    this.retention = { limit: this.options.historyLimit, maxAgeMs: this.options.historyMaxAgeMs };
    this.ready = this.init();
    // A broker that cannot start rejects every task, queued or yet to come; never an unhandled rejection.
    this.ready.catch((error: unknown) => this.failToStart(error));
  }

  private failToStart(error: unknown): void {
    this.startError = `could not start: ${(error as Error).message}`;
    this.logger.error(`the broker ${this.startError}`);
    void this.dataDirLock?.release();
    this.queue.clear();
    for (const entry of this.live.values()) this.end(entry, () => entry.task.fail('crashed', this.startError!));
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
      const emit = (update: TaskUpdate) => this.emit('update', update);
      const warn = (message: string) => this.warn(message);
      const { history, rollup } = this.registry;
      const keep = (id: string) => this.live.get(id)?.resultSummary !== undefined;
      const results = this.results && { store: this.results, keep };
      const recovery = { dir: this.endpointDir, history, rollup, journal: this.journal, results, logger: this.logger, emit, warn };
      const { orphanGraceMs, killGraceMs } = this.options;
      const timing = { retention: this.retention, checkMs: DEFAULTS.spoolCheckMs, orphanGraceMs, killGraceMs };
      this.spoolCheck = await restoreHistory(recovery, timing);
    }
    for (const kind of this.kinds) kind.start?.();
    this.queue.start();
  }

  /** Registers a task and queues it. Returns at once; the endpoint opens when the task starts. */
  submit(spec: TaskSpec): TaskHandle {
    if (this.closing) throw new BrokerError('closed', 'The broker is closed; create a new TaskBroker to run more tasks.');
    validateSpec(spec);
    spec = admitted(spec, this.options.runPolicy, this.logger);
    const id = uuidv7();
    const policy = normalizeRetry(spec.retries ?? this.options.defaults?.retries);
    const cwd = path.resolve(spec.cwd ?? process.cwd());
    const planned = planRuns(this.kinds, id, spec, cwd);
    spec = planned.spec;
    const identity = { id, spec, label: labelOf(spec), cwd, maxAttempts: policy.max + 1 };
    const task = new Task(identity, this.options.maxLogLines, (update) => this.emit('update', update));
    let markFinished!: () => void;
    const finished = new Promise<void>((resolve) => (markFinished = resolve));
    const { runs } = planned;
    const question = new PendingQuestion(task, task.spec.askTimeoutMs ?? this.options.askTimeoutMs, () => askContext(runs));
    const entry: LiveTask = { task, policy, question, finished, markFinished, lastProgressJournal: 0, runs };
    this.live.set(id, entry);
    this.journal?.append({ e: 'queued', id, at: task.createdAt, spec: storedSpec(task), maxAttempts: task.maxAttempts });
    task.queued();
    if (this.startError) {
      this.end(entry, () => task.fail('crashed', this.startError!));
      return this.handle(entry);
    }
    if (spec.signal) cancelOnAbort(spec.signal, task.result, (reason) => this.cancel(id, reason));
    this.queue
      .add(() => this.run(entry))
      .catch((error: unknown) => {
        this.logger.error(`task ${id}: unexpected broker error`, error);
        task.fail('crashed', `failed inside the broker: ${(error as Error).message}`);
        markFinished();
      });
    return this.handle(entry);
  }

  /**
   * A coding task's change and its whole diff; rejects with BrokerError('unknown_task') when it has
   * none, and waits for a task that has ended until its change is recorded (see coding/).
   */
  change(id: string): Promise<TaskChange> {
    return this.coding.change(id);
  }

  /** Every worktree this broker's registry lists (made by Backchannel), oldest first. */
  worktreeList(): WorktreeRecord[] {
    return this.coding.list();
  }

  /** Applies the changes of `ids`, in order, into the user's checkout: all or none (see Worktrees.apply). */
  applyChanges(ids: readonly string[]): Promise<ApplyOutcome> {
    return this.coding.apply(ids);
  }

  /** Removes a finished task's worktree and branch. */
  discardChange(id: string): Promise<WorktreeRecord> {
    return this.coding.discard(id);
  }

  /** Removes a finished task's worktree, keeping its branch. */
  keepBranch(id: string): Promise<WorktreeRecord> {
    return this.coding.keepBranch(id);
  }

  private handle({ task, finished }: LiveTask): TaskHandle {
    return {
      id: task.id,
      result: task.result,
      finished,
      cancel: (reason?: string) => {
        this.cancel(task.id, reason);
      },
      on: (_event: 'update', listener: (update: TaskUpdate) => void) => task.onUpdate(listener),
      snapshot: () => task.snapshot(),
    };
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

  get(id: string): TaskSnapshot | undefined {
    return this.registry.get(id);
  }

  /**
   * The whole final payload of a task (attachments as headers), also when its snapshot carries only
   * a summary: read from disk then. `null` when the task has no result (yet, or the file is gone);
   * undefined for an unknown task.
   */
  result(id: string): FinalPayload | null | undefined {
    const live = this.live.get(id);
    if (live) return live.task.final ? withoutContent(live.task.final) : null;
    const stored = this.registry.history.get(id);
    if (!stored) return undefined;
    if (stored.snapshot.resultSummary) return this.results?.read(id) ?? null;
    return stored.snapshot.result ? structuredClone(stored.snapshot.result) : null;
  }

  logOf(id: string): LogLine[] {
    return this.registry.logOf(id);
  }

  /** An attachment of a final payload, while the task is in memory (live, or finished in this broker); not in history. */
  attachment(id: string, name: string): string | Uint8Array | undefined {
    const live = this.live.get(id);
    if (live) return live.task.attachment(name);
    return this.registry.history.get(id)?.retired?.attachments?.get(name);
  }

  stats(): BrokerStats {
    return this.registry.stats(this.paused);
  }

  /** Duration, outcome and token figures of finished tasks (including those that left history). */
  insights(query: InsightsQuery = {}): Insights {
    const budget = this.options.tokenBudget;
    return { ...this.registry.insights(query), ...(budget ? { budget: { ...budget } } : {}) };
  }

  /** Cancels a queued or running task. Returns false when it is unknown or already finished. */
  cancel(id: string, reason = 'cancelled by the user'): boolean {
    const entry = this.live.get(id);
    if (!entry || entry.task.finished) return false;
    entry.cancelRequested ??= reason;
    const { task } = entry;
    if (entry.attempt && task.state === 'running') {
      entry.attempt.stop('cancelled', reason);
    } else {
      // Queued, or waiting between attempts: nothing is running, so it ends now.
      if (entry.backoff) {
        clearTimeout(entry.backoff.timer);
        entry.backoff.wake();
      }
      this.end(entry, () => task.fail('cancelled', `was cancelled: ${reason}`));
    }
    return true;
  }

  /** Runs a finished task again, as a new task with the same spec. */
  retry(id: string): TaskHandle {
    return this.submit(this.registry.specToRetry(id));
  }

  /** Answers a sub-agent's pending question. Returns false when there is none with that id. */
  answer(id: string, askId: string, answer: string): boolean {
    return this.live.get(id)?.question.answer(askId, answer) ?? false;
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
      for (const kind of this.kinds) kind.close?.();
      this.queue.clear();
      for (const entry of this.live.values()) {
        if (!entry.task.finished) this.cancel(entry.task.id, 'the broker is shutting down');
      }
      await Promise.all([...this.live.values()].map((e) => e.finished));
      this.queue.pause();
      await this.attempts.close();
      this.registry.rollup.flush();
      await this.journal?.close();
      await this.dataDirLock?.release();
    })();
    return this.closing;
  }

  private async run(entry: LiveTask): Promise<void> {
    const { task } = entry;
    if (task.finished) {
      // Ended before it ran (cancelled while queued): it leaves memory for history all the same.
      this.retire(entry);
      this.evict();
      return entry.markFinished();
    }
    const estimate = task.spec.estimatedTokens ?? 0;
    if (this.budget && estimate > 0) await this.budget.acquire(estimate);
    const prepared = await this.prepare(entry);
    for (let number = 1; prepared && !task.finished; number++) {
      const retry = await this.runAttempt(entry, number);
      if (retry === undefined) break;
      // Cancelled (or the broker closing) after this attempt was already decided for a retry: no next attempt.
      if (entry.cancelRequested !== undefined) {
        const reason = entry.cancelRequested;
        this.end(entry, () => task.fail('cancelled', `was cancelled: ${reason}`));
        break;
      }
      await this.backoff(entry, number, retry);
    }
    await this.capture(entry);
    if (this.budget && estimate > 0) this.budget.settle(estimate, tokensUsed(task.final?.meta?.token_usage) ?? estimate);
    this.retire(entry);
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

  /**
   * A finished task leaves memory for history once its processes are gone: its Task (the whole
   * result, also in its settled promise, its spec with the caller's environment, its question, its
   * listeners) is dropped; its snapshot, log and attachments' content stay, and what a Retry needs of
   * its spec beyond what history stores. Before, only tasks whose result went to disk did: every
   * other finished task was kept whole until the history limit (~3 KB each in a hub, issue 27).
   */
  private retire(entry: LiveTask): void {
    if (entry.attempt) return;
    const { task } = entry;
    const attachments = new Map<string, string | Uint8Array>();
    for (const a of task.final?.attachments ?? []) if (a.content !== undefined) attachments.set(a.name, a.content);
    this.registry.retire(task.id, storedSpec(task), attachments, retrySpec(task.spec));
  }

  /** Runs attempt `number` to its end. Returns why to retry, or undefined when the task has ended. */
  private async runAttempt(entry: LiveTask, number: number): Promise<string | undefined> {
    const { task } = entry;
    task.startAttempt(number);
    const settings = attemptSettings(task, number, this.options, { endpointDir: this.endpointDir, baseEnv: this.baseEnv });
    // A coding task runs in its worktree, in the subdirectory its cwd is in the repository.
    settings.cwd = attemptCwd(entry.runs) ?? settings.cwd;
    const attempt = this.attempts.attempt(
      settings,
      attemptSink(task, this.logger, {
        partial: () => this.journalProgress(entry),
        ask: (message, reply) => entry.question.ask(message, reply),
        // The start time tells a restarted broker its own leftover agent from a reused pid (local processes only).
        spawned: (pid) => {
          if (!this.journal) return;
          const pidStart = this.attempts.kind === 'local' ? processStartTime(pid) : undefined;
          this.journal.append({ e: 'attempt', id: task.id, at: isoNow(), attempt: number, pid, pidStart });
        },
      }),
    );
    entry.attempt = attempt;
    task.started();
    await attempt.start();
    const retry = this.decide(entry, number, await attempt.outcome);
    await attempt.finished;
    entry.attempt = undefined;
    if (retry !== undefined) return retry;
    await this.capture(entry);
    task.attemptExited(attempt.exitCode, attempt.exitSignal ?? null);
    // The record written at the decision was fsynced and holds the result; this one adds the exit code and signal only.
    this.journal?.append({ e: 'exited', id: task.id, at: isoNow(), exitCode: attempt.exitCode, signal: attempt.exitSignal ?? null });
    return undefined;
  }

  /** The kinds' prepare step; false when one failed (the task then failed, before any attempt). */
  private async prepare(entry: LiveTask): Promise<boolean> {
    const { task } = entry;
    try {
      await prepareRuns(entry.runs, this.step(entry));
      return true;
    } catch (error) {
      this.end(entry, () => task.fail('error', `failed: ${(error as Error).message}`));
      return false;
    }
  }

  /** The kinds' capture step, once, when the task's processes are gone (before `exited` is announced). */
  private async capture(entry: LiveTask): Promise<void> {
    if (entry.captured) return;
    entry.captured = true;
    await captureRuns(entry.runs, this.step(entry));
  }

  private step(entry: LiveTask): KindStep {
    return { task: entry.task, journal: (record, durable) => this.journal?.append(record, durable) };
  }

  /** Waits out the retry delay (a cancel wakes it early). */
  private async backoff(entry: LiveTask, number: number, why: string): Promise<void> {
    const delay = backoffDelay(entry.policy, number);
    entry.task.retrying(why, delay);
    await new Promise<void>((wake) => {
      entry.backoff = { timer: setTimeout(wake, delay), wake };
    });
    entry.backoff = undefined;
  }

  /** Applies an attempt's outcome. Returns a retry reason, or undefined when the task has ended. */
  private decide(entry: LiveTask, number: number, outcome: AttemptOutcome): string | undefined {
    const { task } = entry;
    if (task.finished) return undefined;
    const canRetry = number < task.maxAttempts && !entry.cancelRequested && !this.closing;
    const decision = decide(outcome, canRetry, entry.cancelRequested !== undefined);
    if (decision.kind === 'retry') return decision.why;
    this.end(entry, () => settle(task, decision));
    return undefined;
  }

  /** Ends a task once: settles it, drops its question, records it durably. */
  private end(entry: LiveTask, settleTask: () => void): void {
    const { task } = entry;
    if (task.finished) return;
    entry.question.drop();
    settleTask();
    if (!entry.attempt) queueMicrotask(() => !entry.attempt && entry.markFinished());
    // A big result is written once, to its own file; the journal and every snapshot carry its summary.
    if (this.results && task.final) entry.resultSummary = this.results.write(task.id, withoutContent(task.final));
    const snapshot = entry.resultSummary ? withSummary(task.snapshot(), entry.resultSummary) : task.snapshot();
    this.journal?.append({ e: 'ended', id: task.id, at: isoNow(), task: snapshot }, true);
  }

  /** At most one progress record per task per interval. */
  private journalProgress(entry: LiveTask): void {
    const now = Date.now();
    if (!this.journal || now - entry.lastProgressJournal < DEFAULTS.progressJournalIntervalMs) return;
    entry.lastProgressJournal = now;
    this.journal.append(progressRecord(entry.task));
  }

  private warn(message: string): void {
    this.logger.warn(message);
    this.emit('warning', message);
  }
}
