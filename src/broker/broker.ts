/**
 * TaskBroker: registers tasks, runs their attempts under a concurrency queue and guards, and settles
 * each task's `result` exactly once. Electron-free; the desktop shell, the CLI and the headless
 * server all drive this class.
 */
import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import PQueue from 'p-queue';
import { v7 as uuidv7 } from 'uuid';
import { isFinalStatus, isoNow, validateAgentMessage, type FinalPayload } from '../protocol/index.js';
import { backoffDelay, isRetryable, normalizeRetry } from './guards/retry.js';
import { TokenBudget, tokensUsed, type TokenBudgetOptions } from './guards/token-budget.js';
import { Journal, type HistoryEntry, type StoredSpec } from './history/journal.js';
import { createHeadlessLogger, type Logger } from './log.js';
import { filterEnv, type EnvPolicy } from './process/environment.js';
import { Attempt, type AttemptSettings } from './task/attempt.js';
import { BrokerError } from './errors.js';
import { Task } from './task/task.js';
import type { FailureReason, LogLine, RetryPolicy, TaskSnapshot, TaskSpec, TaskUpdate } from '../model/task.js';
import { DEFAULT_CHANNEL_LIMITS, type ChannelLimits } from './transport/channel.js';
import { chooseEndpointDir, ensurePrivateDir, sweepStaleSockets } from './transport/endpoint.js';

/** Named defaults, each with its reason. */
export const DEFAULTS = {
  /** Two per core keeps a 2-core laptop responsive while agents mostly wait on the network. */
  concurrency: Math.max(2, os.cpus().length * 2),
  /** Time a cancelled agent gets to send `cancelled` and exit by itself. */
  cancelGraceMs: 3000,
  /** SIGTERM → SIGKILL, as execa's forceKillAfterDelay. */
  killGraceMs: 1000,
  /** Output still in flight after exit normally arrives within a few ms; grandchildren may hold pipes. */
  drainMs: 1000,
  /** Lines of log kept per task. */
  maxLogLines: 500,
  /** Finished tasks kept in memory and in the journal. */
  historyLimit: 1000,
  /** How long an `ask` waits for a person. */
  askTimeoutMs: 5 * 60_000,
  /** At most one journal progress record per task per second. */
  progressJournalIntervalMs: 1000,
  /** How often to look for spool files of interrupted tasks whose agents outlived the last broker. */
  spoolCheckMs: 2000,
} as const;

/** Inputs up to this size are kept in history so a finished task can be retried after a restart. */
const MAX_STORED_INPUT_BYTES = 64 * 1024;

export interface BrokerOptions {
  /** Tasks running at once. @default 2 × cores */
  concurrency?: number;
  /** Private endpoint directory. @default $CURSOR_IPC_DIR, else $XDG_RUNTIME_DIR or tmpdir + /backchannel-<uid> */
  ipcDir?: string;
  /** Where the history journal lives; no history without it. */
  dataDir?: string;
  /** Framing and connection limits (see docs/protocol.md §2). */
  limits?: Partial<ChannelLimits>;
  cancelGraceMs?: number;
  killGraceMs?: number;
  drainMs?: number;
  /** Defaults for task specs that do not set these. */
  defaults?: Pick<TaskSpec, 'timeoutMs' | 'heartbeatTimeoutMs' | 'retries'>;
  /** Which of the broker's environment variables sub-agents inherit. */
  env?: EnvPolicy;
  logger?: Logger;
  tokenBudget?: TokenBudgetOptions;
  askTimeoutMs?: number;
  maxLogLines?: number;
  historyLimit?: number;
  /** Log the first 100 characters of every received line to the task log. @default BACKCHANNEL_DEBUG=1 */
  traceLines?: boolean;
}

export interface TaskHandle {
  readonly id: string;
  /** Resolves with the `success` payload; rejects with a TaskError otherwise. */
  readonly result: Promise<FinalPayload>;
  /** Resolves when the task's processes are gone and its endpoints removed. */
  readonly finished: Promise<void>;
  cancel(reason?: string): void;
  on(event: 'update', listener: (update: TaskUpdate) => void): () => void;
  snapshot(): TaskSnapshot;
}

export interface BrokerStats {
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  interrupted: number;
  paused: boolean;
}

interface LiveTask {
  task: Task;
  policy: RetryPolicy;
  attempt?: Attempt;
  finished: Promise<void>;
  markFinished: () => void;
  cancelRequested?: string;
  backoff?: { timer: NodeJS.Timeout; wake: () => void };
  askReply?: { askId: string; reply: (message: import('../protocol/index.js').BrokerMessage) => void; timer: NodeJS.Timeout };
  lastProgressJournal: number;
}

/** The broker's events; `on`/`off`/`emit` are typed from this map. */
export interface BrokerEvents {
  /** Every task change. */
  update: [update: TaskUpdate];
  /** Something the broker could not do but survived (e.g. history cannot be written). */
  warning: [message: string];
  /** The queue was paused (`true`) or resumed (`false`). */
  paused: [paused: boolean];
  /** Finished tasks that left memory (the history limit): `tasks()`/`get()` no longer know them. */
  removed: [taskIds: string[]];
}

export class TaskBroker extends EventEmitter<BrokerEvents> {
  readonly endpointDir: string;
  readonly ready: Promise<void>;
  private readonly options: Required<
    Pick<BrokerOptions, 'cancelGraceMs' | 'killGraceMs' | 'drainMs' | 'askTimeoutMs' | 'maxLogLines' | 'historyLimit'>
  > &
    BrokerOptions;
  private readonly limits: ChannelLimits;
  private readonly logger: Logger;
  private readonly queue: PQueue;
  private readonly live = new Map<string, LiveTask>();
  private readonly history = new Map<string, HistoryEntry>();
  private readonly journal: Journal | undefined;
  private readonly budget: TokenBudget | undefined;
  private readonly baseEnv: Record<string, string>;
  private closing: Promise<void> | undefined;
  private spoolCheck: NodeJS.Timeout | undefined;

  constructor(options: BrokerOptions = {}) {
    super();
    this.setMaxListeners(0);
    this.options = {
      cancelGraceMs: DEFAULTS.cancelGraceMs,
      killGraceMs: DEFAULTS.killGraceMs,
      drainMs: DEFAULTS.drainMs,
      askTimeoutMs: DEFAULTS.askTimeoutMs,
      maxLogLines: DEFAULTS.maxLogLines,
      historyLimit: DEFAULTS.historyLimit,
      ...stripUndefined(options),
    };
    const concurrency = options.concurrency ?? DEFAULTS.concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new BrokerError('invalid_option', `Expected \`concurrency\` to be a positive integer, got \`${String(concurrency)}\``);
    }
    this.limits = { ...DEFAULT_CHANNEL_LIMITS, ...stripUndefined(options.limits ?? {}) };
    this.logger = options.logger ?? createHeadlessLogger();
    this.queue = new PQueue({ concurrency, autoStart: false });
    this.endpointDir = chooseEndpointDir(options.ipcDir);
    this.journal = options.dataDir ? new Journal(options.dataDir, this.logger) : undefined;
    this.budget = options.tokenBudget ? new TokenBudget(options.tokenBudget) : undefined;
    this.baseEnv = filterEnv(process.env, options.env);
    this.ready = this.init();
    // A failed init surfaces through submit()/tasks; never as an unhandled rejection.
    this.ready.catch(() => {});
  }

  private async init(): Promise<void> {
    ensurePrivateDir(this.endpointDir);
    const stale = await sweepStaleSockets(this.endpointDir);
    if (stale.length > 0) this.logger.info(`removed ${stale.length} stale socket file(s) from ${this.endpointDir}`);
    if (this.journal) {
      const { entries, skippedLines } = this.journal.load();
      if (skippedLines > 0) this.warn(`history: skipped ${skippedLines} corrupt journal line(s)`);
      for (const entry of entries.slice(-this.options.historyLimit)) this.history.set(entry.snapshot.id, entry);
      await this.journal.open();
      if (this.journal.error) this.warn(this.journal.error);
      this.adoptSpooledResults();
      // Agents of the dead broker may still be working: adopt their results when they spool them.
      if ([...this.history.values()].some((e) => e.snapshot.state === 'interrupted')) {
        this.spoolCheck = setInterval(() => this.adoptSpooledResults(true), DEFAULTS.spoolCheckMs);
        this.spoolCheck.unref();
      }
      if (this.journal.needsCompaction || entries.length > this.history.size) await this.journal.compact([...this.history.values()]);
    }
    this.queue.start();
  }

  /** Registers a task and queues it. Returns at once; the endpoint opens when the task starts. */
  submit(spec: TaskSpec): TaskHandle {
    if (this.closing) throw new BrokerError('closed', 'The broker is closed; create a new TaskBroker to run more tasks.');
    validateSpec(spec);
    const id = uuidv7();
    const policy = normalizeRetry(spec.retries ?? this.options.defaults?.retries);
    const cwd = path.resolve(spec.cwd ?? process.cwd());
    const label = spec.label ?? [spec.command, ...(spec.args ?? [])].join(' ');
    const task = new Task(id, spec, label, cwd, policy.max + 1, this.options.maxLogLines, (update) => this.emit('update', update));
    let markFinished!: () => void;
    const finished = new Promise<void>((resolve) => (markFinished = resolve));
    const entry: LiveTask = { task, policy, finished, markFinished, lastProgressJournal: 0 };
    this.live.set(id, entry);
    this.journal?.append({ e: 'queued', id, at: task.createdAt, spec: this.storedSpec(task), maxAttempts: task.maxAttempts });
    task.update('queued');

    const signal = spec.signal;
    if (signal) {
      const onAbort = () => this.cancel(id, abortReason(signal));
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        // A long-lived signal shared by many tasks must not collect one listener per finished task.
        const detach = () => signal.removeEventListener('abort', onAbort);
        task.result.then(detach, detach);
      }
    }
    this.queue
      .add(() => this.run(entry))
      .catch((error: unknown) => {
        this.logger.error(`task ${id}: unexpected broker error`, error);
        task.fail('crashed', `failed inside the broker: ${(error as Error).message}`);
        markFinished();
      });
    return {
      id,
      result: task.result,
      finished,
      cancel: (reason?: string) => {
        this.cancel(id, reason);
      },
      on: (_event: 'update', listener: (update: TaskUpdate) => void) => {
        task.events.on('update', listener);
        return () => task.events.off('update', listener);
      },
      snapshot: () => task.snapshot(),
    };
  }

  /** Every task the broker knows, live and from history, oldest first. */
  tasks(): TaskSnapshot[] {
    const all: TaskSnapshot[] = [];
    for (const entry of this.history.values()) if (!this.live.has(entry.snapshot.id)) all.push(structuredClone(entry.snapshot));
    for (const entry of this.live.values()) all.push(entry.task.snapshot());
    return all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  }

  get(id: string): TaskSnapshot | undefined {
    const live = this.live.get(id);
    if (live) return live.task.snapshot();
    const stored = this.history.get(id);
    return stored ? structuredClone(stored.snapshot) : undefined;
  }

  logOf(id: string): LogLine[] {
    return this.live.get(id)?.task.logLines() ?? [];
  }

  stats(): BrokerStats {
    const stats: BrokerStats = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0, paused: this.paused };
    for (const snapshot of this.tasks()) {
      if (snapshot.state === 'retrying') stats.running += 1;
      else stats[snapshot.state] += 1;
    }
    return stats;
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
    const live = this.live.get(id);
    if (live) {
      if (!live.task.finished) throw new BrokerError('not_retryable', `Task ${id} is still ${live.task.state}; cancel it first.`);
      const { signal: _signal, ...spec } = live.task.spec;
      return this.submit(spec);
    }
    const stored = this.history.get(id);
    if (!stored) throw new BrokerError('unknown_task', `No task with id ${id}.`);
    const { label, retries, ...rest } = stored.spec;
    return this.submit({ ...rest, label, ...(retries !== undefined ? { retries } : {}) });
  }

  /** Answers a sub-agent's pending question. Returns false when there is none with that id. */
  answer(id: string, askId: string, answer: string): boolean {
    const entry = this.live.get(id);
    const pending = entry?.askReply;
    if (!entry || !pending || pending.askId !== askId) return false;
    clearTimeout(pending.timer);
    entry.askReply = undefined;
    entry.task.pendingQuestion = undefined;
    pending.reply({ type: 'answer', task_id: id, ask_id: askId, answer: String(answer) });
    entry.task.update('answered');
    return true;
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

  /** Why the history journal cannot be written, if it cannot. */
  get historyError(): string | undefined {
    return this.journal?.error;
  }

  /** Cancels everything, waits for processes to go, removes endpoints, flushes history. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.ready.catch(() => {});
      clearInterval(this.spoolCheck);
      this.queue.clear();
      for (const entry of this.live.values()) {
        if (!entry.task.finished) this.cancel(entry.task.id, 'the broker is shutting down');
      }
      await Promise.all([...this.live.values()].map((e) => e.finished));
      this.queue.pause();
      await this.journal?.close();
    })();
    return this.closing;
  }

  private async run(entry: LiveTask): Promise<void> {
    const { task, policy } = entry;
    if (task.finished) return entry.markFinished();
    const estimate = task.spec.estimatedTokens ?? 0;
    if (this.budget && estimate > 0) await this.budget.acquire(estimate);
    for (let number = 1; ; number++) {
      if (task.finished) break;
      task.startAttempt(number);
      const attempt = new Attempt(this.attemptSettings(task, number), {
        partial: (payload) => {
          task.recordPartial(payload);
          this.journalProgress(entry);
        },
        log: (stream, text) => {
          const line = task.addLog(stream, text);
          if (stream === 'broker') this.logger.info(`task ${task.id}: ${text}`);
          task.update('log', { line });
        },
        problem: (kind, detail) => {
          task.counters[kind] += 1;
          task.addLog('broker', `${kind}: ${detail}`);
          // Output after the task was decided is expected noise (stdout agents, shutdown); keep it out of warnings.
          if (kind === 'ignored') this.logger.debug(`task ${task.id}: ${kind}: ${detail}`);
          else this.logger.warn(`task ${task.id}: ${kind}: ${detail}`);
        },
        ask: (message, reply) => this.onAsk(entry, message, reply),
        spawned: (pid) => {
          task.pid = pid;
          this.journal?.append({ e: 'attempt', id: task.id, at: isoNow(), attempt: number, pid });
        },
      });
      entry.attempt = attempt;
      task.update('started');
      await attempt.start();
      const outcome = await attempt.outcome;
      const retry = this.decide(entry, number, outcome);
      if (!retry) {
        await attempt.finished;
        task.pid = undefined;
        task.exitCode = attempt.exitCode;
        task.exitSignal = attempt.exitSignal ?? null;
        entry.attempt = undefined;
        task.update('exited');
        // The record written at the decision was fsynced; this one adds the exit code and signal.
        this.journal?.append({ e: 'ended', id: task.id, at: isoNow(), task: task.snapshot() });
        break;
      }
      await attempt.finished;
      entry.attempt = undefined;
      const delay = backoffDelay(policy, number);
      task.state = 'retrying';
      task.message = retry;
      task.addLog('broker', `attempt ${number} failed (${retry}); retrying in ${delay} ms`);
      task.update('retrying');
      await new Promise<void>((wake) => {
        entry.backoff = { timer: setTimeout(wake, delay), wake };
      });
      entry.backoff = undefined;
    }
    if (this.budget && estimate > 0) this.budget.settle(estimate, tokensUsed(task.final?.meta?.token_usage) ?? estimate);
    this.evictOldFinished();
    entry.markFinished();
  }

  /** Applies an attempt's outcome. Returns a retry reason, or undefined when the task has ended. */
  private decide(entry: LiveTask, number: number, outcome: import('./task/attempt.js').AttemptOutcome): string | undefined {
    const { task } = entry;
    if (task.finished) return undefined;
    const canRetry = number < task.maxAttempts && !entry.cancelRequested && !this.closing;
    if (outcome.kind === 'final') {
      const { payload, channel } = outcome;
      if (payload.status === 'success') {
        this.end(entry, () => task.succeed(payload, channel));
        return undefined;
      }
      if (payload.status === 'cancelled') {
        this.end(entry, () => task.fail('cancelled', 'was cancelled by the agent', payload, channel));
        return undefined;
      }
      const message = errorMessageOf(payload);
      if (canRetry && isRetryable('error', payload.retryable)) return `agent error: ${message}`;
      this.end(entry, () => task.fail('error', `failed: ${message}`, payload, channel));
      return undefined;
    }
    if (canRetry && outcome.retryable && isRetryable(outcome.reason, undefined)) return outcome.message;
    const reason: FailureReason = entry.cancelRequested ? 'cancelled' : outcome.reason;
    this.end(entry, () => task.fail(reason, outcome.message));
    return undefined;
  }

  /** Ends a task once: settles it, drops its question, records it durably. */
  private end(entry: LiveTask, settle: () => void): void {
    const { task } = entry;
    if (task.finished) return;
    if (entry.askReply) {
      clearTimeout(entry.askReply.timer);
      entry.askReply = undefined;
    }
    settle();
    if (!entry.attempt) queueMicrotask(() => !entry.attempt && entry.markFinished());
    this.journal?.append({ e: 'ended', id: task.id, at: isoNow(), task: task.snapshot() }, true);
  }

  private onAsk(
    entry: LiveTask,
    message: import('../protocol/index.js').AskMessage,
    reply: (m: import('../protocol/index.js').BrokerMessage) => void,
  ): void {
    const { task } = entry;
    if (entry.askReply) {
      reply({ type: 'answer', task_id: task.id, ask_id: message.ask_id, error: 'another question is already waiting for an answer' });
      return;
    }
    const timer = setTimeout(() => {
      if (entry.askReply?.askId !== message.ask_id) return;
      entry.askReply = undefined;
      task.pendingQuestion = undefined;
      reply({ type: 'answer', task_id: task.id, ask_id: message.ask_id, error: `nobody answered within ${this.options.askTimeoutMs} ms` });
      task.addLog('broker', `question "${message.question.slice(0, 80)}" timed out`);
      task.update('answered');
    }, this.options.askTimeoutMs);
    entry.askReply = { askId: message.ask_id, reply, timer };
    task.pendingQuestion = {
      askId: message.ask_id,
      question: message.question,
      askedAt: isoNow(),
      ...(message.choices ? { choices: message.choices } : {}),
    };
    task.update('ask');
  }

  private attemptSettings(task: Task, attempt: number): AttemptSettings {
    const spec = task.spec;
    const args = [...(spec.args ?? [])];
    if (spec.taskIdArg !== false) args.push(`--task-id=${task.id}`);
    const env = { ...this.baseEnv };
    for (const [name, value] of Object.entries(spec.env ?? {})) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    return {
      taskId: task.id,
      attempt,
      command: spec.command,
      args,
      cwd: task.cwd,
      env,
      input: spec.input,
      timeoutMs: spec.timeoutMs ?? this.options.defaults?.timeoutMs ?? 0,
      heartbeatTimeoutMs: spec.heartbeatTimeoutMs ?? this.options.defaults?.heartbeatTimeoutMs ?? 0,
      endpointDir: this.endpointDir,
      spoolDir: this.endpointDir,
      limits: this.limits,
      cancelGraceMs: this.options.cancelGraceMs,
      killGraceMs: this.options.killGraceMs,
      drainMs: this.options.drainMs,
      traceLines: this.options.traceLines ?? process.env.BACKCHANNEL_DEBUG === '1',
    };
  }

  private journalProgress(entry: LiveTask): void {
    if (!this.journal) return;
    const now = Date.now();
    if (now - entry.lastProgressJournal < DEFAULTS.progressJournalIntervalMs) return;
    entry.lastProgressJournal = now;
    const { task } = entry;
    this.journal.append({ e: 'progress', id: task.id, at: isoNow(), progress: task.progress, partial: clipForHistory(task.lastPartial) });
  }

  private storedSpec(task: Task): StoredSpec {
    const spec = task.spec;
    const stored: StoredSpec = { command: spec.command, args: spec.args ?? [], cwd: task.cwd, label: task.label };
    if (spec.timeoutMs !== undefined) stored.timeoutMs = spec.timeoutMs;
    if (spec.heartbeatTimeoutMs !== undefined) stored.heartbeatTimeoutMs = spec.heartbeatTimeoutMs;
    if (task.maxAttempts > 1) stored.retries = task.maxAttempts - 1;
    if (spec.tags) stored.tags = spec.tags;
    if (spec.input !== undefined) {
      const json = JSON.stringify(spec.input);
      if (json !== undefined && json.length <= MAX_STORED_INPUT_BYTES) stored.input = spec.input;
    }
    return stored;
  }

  /** Keeps memory bounded: finished live tasks beyond the history limit move out. */
  private evictOldFinished(): void {
    const finished = [...this.live.values()].filter((e) => e.task.finished && !e.attempt);
    const excess = finished.length + this.history.size - this.options.historyLimit;
    if (excess <= 0) return;
    const historic = [...this.history.keys()].slice(0, Math.min(excess, this.history.size));
    const evicted = [...historic, ...finished.slice(0, excess - historic.length).map((entry) => entry.task.id)];
    for (const id of historic) this.history.delete(id);
    for (const id of evicted.slice(historic.length)) this.live.delete(id);
    this.emit('removed', evicted);
  }

  /**
   * A sub-agent whose broker vanished writes its final payload to `<endpointDir>/<task_id>.json`.
   * Adopt those into history (the task shows its real result instead of "interrupted").
   */
  private adoptSpooledResults(onlyInterrupted = false): void {
    let names: string[];
    try {
      names = readdirSync(this.endpointDir).filter((n) => n.endsWith('.json'));
    } catch {
      return;
    }
    // While running, live tasks' spool files are their attempts' business: look only at interrupted ones.
    if (onlyInterrupted) names = names.filter((n) => this.history.get(n.slice(0, -'.json'.length))?.snapshot.state === 'interrupted');
    for (const name of names) {
      const file = path.join(this.endpointDir, name);
      try {
        const checked = validateAgentMessage(JSON.parse(readFileSync(file, 'utf8')));
        if (!checked.ok || !('status' in checked.message) || !isFinalStatus(checked.message.status))
          throw new Error(checked.ok ? 'not a final payload' : checked.reason);
        const payload = checked.message as FinalPayload;
        const entry = this.history.get(payload.task_id);
        if (entry && entry.snapshot.state === 'interrupted') {
          const { token: _token, ...clean } = payload;
          const snapshot = entry.snapshot;
          snapshot.result = { ...clean, meta: { ...clean.meta, channel: 'spool', attempts: snapshot.attempt, received_at: isoNow() } };
          snapshot.state = payload.status === 'success' ? 'succeeded' : payload.status === 'cancelled' ? 'cancelled' : 'failed';
          snapshot.endedAt = isoNow();
          if (payload.status === 'success') {
            delete snapshot.reason;
            delete snapshot.message;
            snapshot.progress = 100;
          } else {
            snapshot.reason = payload.status === 'cancelled' ? 'cancelled' : 'error';
            snapshot.message = `failed: ${errorMessageOf(payload)} (result recovered from the spool)`;
          }
          this.journal?.append({ e: 'ended', id: snapshot.id, at: snapshot.endedAt, task: snapshot, spec: entry.spec }, true);
          this.logger.info(`adopted spooled result of task ${snapshot.id}`);
          this.emit('update', {
            taskId: snapshot.id,
            kind: 'ended',
            state: snapshot.state,
            attempt: snapshot.attempt,
            progress: snapshot.progress,
          });
        } else {
          this.logger.warn(`spool file ${name} is for a task not waiting in history; removed`);
        }
      } catch (error) {
        this.logger.warn(`spool file ${name} is unreadable (${(error as Error).message}); removed`);
      }
      try {
        unlinkSync(file);
      } catch {
        // Gone already.
      }
    }
  }

  private warn(message: string): void {
    this.logger.warn(message);
    this.emit('warning', message);
  }
}

function validateSpec(spec: TaskSpec): void {
  if (typeof spec !== 'object' || spec === null) throw new BrokerError('invalid_option', 'Expected a task spec object.');
  if (typeof spec.command !== 'string' || spec.command.trim() === '') {
    throw new BrokerError('invalid_option', 'Expected `command` to be a non-empty string (the executable, without a shell).');
  }
  if (spec.args !== undefined && !(Array.isArray(spec.args) && spec.args.every((a) => typeof a === 'string'))) {
    throw new BrokerError('invalid_option', 'Expected `args` to be an array of strings.');
  }
  for (const key of ['timeoutMs', 'heartbeatTimeoutMs', 'estimatedTokens'] as const) {
    const value = spec[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
      throw new BrokerError('invalid_option', `Expected \`${key}\` to be a non-negative finite number, got \`${String(value)}\``);
    }
  }
}

/** The caller's abort reason as text (`controller.abort('user closed the tab')`), or a default. */
function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === 'string' && reason) return reason;
  if (reason instanceof Error && reason.name !== 'AbortError' && reason.message) return reason.message;
  return 'aborted by the caller';
}

function errorMessageOf(payload: FinalPayload): string {
  const data = payload.data as { message?: unknown } | string | undefined;
  if (typeof data === 'string') return data.slice(0, 500);
  if (data && typeof data === 'object' && typeof data.message === 'string') return data.message.slice(0, 500);
  return `the agent reported ${payload.status}`;
}

function clipForHistory(value: unknown): unknown {
  if (value === undefined) return undefined;
  const json = JSON.stringify(value);
  return json !== undefined && json.length <= 4096 ? value : { truncated: true, chars: json?.length };
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
