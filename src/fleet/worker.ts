/**
 * A fleet worker: takes attempt jobs from the BullMQ queue and runs each as a local `Attempt` —
 * the same per-task socket, protocol, guards and process-tree kill as the local broker — then
 * reports back: partials, log lines and questions as job progress (./reporter.ts: every event in
 * order, batched; only progress-only partials coalesced), the outcome as the job's return value. Stop and answer messages arrive on the
 * control channel. A heartbeat in the fleet hash shows the worker, its load and its age in the panel.
 */
import os from 'node:os';
import { Worker, type Job } from 'bullmq';
import type { BrokerMessage } from '../protocol/index.js';
import { silentLogger, type Logger } from '../broker/log.js';
import { filterEnv, type EnvPolicy } from '../broker/process/environment.js';
import { DEFAULTS } from '../broker/settings.js';
import { Attempt, type AttemptSettings, type AttemptSink } from '../broker/task/attempt.js';
import { DEFAULT_CHANNEL_LIMITS } from '../broker/transport/channel.js';
import { chooseEndpointDir, ensurePrivateDir, sweepStaleSockets } from '../broker/transport/endpoint.js';
import type { Admitted, AllowList } from './allow-list.js';
import { emitErrorsToListenersOnly, FleetConnection } from './connection.js';
import type { FleetEntry } from './redis-queue.js';
import { connectionOf, DEFAULT_QUEUE_NAME, keys, PREFIX, type AttemptJob, type AttemptReport, type ControlMessage } from './wire.js';
import { Reporter } from './reporter.js';
import { AgentKeeper } from './keeper.js';
import { acpLaunch } from './acp-launch.js';
import { ACP_SETTINGS_ENV } from '../broker/acp/index.js';
import { forgetJob, noteJob, spooledReports } from './adopt.js';

export interface FleetWorkerOptions {
  redis: string;
  tls?: Record<string, unknown>;
  /** Queue name, as the broker's. @default 'agents' */
  name?: string;
  /** This worker's name in the panel. @default <host>-<pid> */
  workerName?: string;
  /** Sub-agents at once. @default 2 × cores */
  concurrency?: number;
  allow: AllowList;
  /**
   * A job whose worker has not renewed its lock for this long is failed as stalled (and retried by
   * the broker on another worker). @default 30000 (BullMQ's default)
   */
  lockDurationMs?: number;
  ipcDir?: string;
  env?: EnvPolicy;
  logger?: Logger;
}

const HEARTBEAT_MS = 1000;
/** How long a finished report waits in Redis for its broker (one that is down longer loses it). */
const REPORT_KEPT_SECONDS = 24 * 3600;

interface RunningJob {
  attempt: Attempt;
  replies: Map<string, (message: BrokerMessage) => void>;
  /** The agent's tool calls waiting for their result, by call id (apart from questions: ids may clash). */
  toolReplies: Map<string, (message: BrokerMessage) => void>;
}

/** How long close() waits for running jobs: the core's cancel grace (3 s) + kill grace (1 s) + slack. */
const CLOSE_WAIT_MS = 8_000;
/** How long close() waits to take the worker out of the fleet before it cuts the connection. */
const LEAVE_WAIT_MS = 2_000;

export class FleetWorker {
  readonly name: string;
  private readonly worker: Worker<AttemptJob, AttemptReport>;
  private readonly keys: ReturnType<typeof keys>;
  private readonly running = new Map<string, RunningJob>();
  private readonly endpointDir: string;
  private readonly baseEnv: Record<string, string>;
  private readonly logger: Logger;
  private subscriber: Awaited<Worker['client']> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly concurrency: number;
  private closing = false;
  /** Stops this worker's agents when it dies, however it dies (./keeper.ts). */
  private keeper: AgentKeeper | undefined;

  constructor(private readonly options: FleetWorkerOptions) {
    this.name = options.workerName ?? `${os.hostname()}-${process.pid}`;
    this.concurrency = options.concurrency ?? DEFAULTS.concurrency;
    this.keys = keys(options.name ?? DEFAULT_QUEUE_NAME);
    this.logger = options.logger ?? silentLogger;
    this.endpointDir = chooseEndpointDir(options.ipcDir);
    this.baseEnv = filterEnv(process.env, options.env);
    const lockDuration = options.lockDurationMs ?? 30_000;
    this.worker = new Worker<AttemptJob, AttemptReport>(
      options.name ?? DEFAULT_QUEUE_NAME,
      (job) => this.process(job),
      {
        connection: connectionOf(options.redis, options.tls),
        prefix: PREFIX,
        concurrency: this.concurrency,
        autorun: false,
        lockDuration,
        stalledInterval: Math.max(500, Math.floor(lockDuration / 2)),
        maxStalledCount: 0,
      },
      FleetConnection,
    );
    emitErrorsToListenersOnly(this.worker['blockingConnection']);
    this.worker.on('error', (error) => this.logger.warn(`worker ${this.name}: ${error.message}`));
  }

  /** Connects, subscribes to the control channel, starts the heartbeat and takes jobs. */
  async start(): Promise<void> {
    ensurePrivateDir(this.endpointDir);
    await sweepStaleSockets(this.endpointDir);
    this.keeper ??= new AgentKeeper((message) => this.logger.warn(`worker ${this.name}: ${message}`));
    const client = await this.worker.client;
    await this.adoptSpooled(client);
    const subscriber = client.duplicate();
    this.subscriber = subscriber;
    subscriber.on('error', () => {});
    subscriber.on('message', (_channel: string, text: string) => this.control(JSON.parse(text) as ControlMessage));
    await subscriber.subscribe(this.keys.control);
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat().catch(() => {}), HEARTBEAT_MS);
    void this.worker.run().catch((error: Error) => this.logger.error(`worker ${this.name} stopped`, error));
    await this.worker.waitUntilReady();
  }

  /** Stops taking jobs, lets running ones finish (or stops them with `force`), leaves the fleet. */
  async close(force = false): Promise<void> {
    clearInterval(this.heartbeat);
    this.closing = true;
    if (force) for (const job of this.running.values()) job.attempt.stop('cancelled', 'the worker is shutting down');
    // BullMQ's close waits for every running job; a stopped attempt ends within its grace periods,
    // so past that (plus slack) the worker stops waiting rather than hang its shutdown.
    const graceful = this.worker.close().then(() => true);
    const late = new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_WAIT_MS).unref());
    if (!(await Promise.race([graceful, late]))) await this.worker.close(true).catch(() => {});
    await this.leaveFleet();
    this.keeper?.close();
    // A connection whose start-up close() cut (Redis hung) has nothing left to disconnect: it rejects.
    await this.worker.disconnect().catch(() => {});
  }

  /**
   * Takes this worker's entry out of the fleet, so no list shows it after it stopped. On the control
   * connection, out of subscribe mode first: BullMQ's close has ended the worker's own connection,
   * where the command would be refused. Bounded: Redis may be away or hung.
   */
  private async leaveFleet(): Promise<void> {
    const subscriber = this.subscriber;
    if (!subscriber) return;
    const left = subscriber
      .unsubscribe()
      .then(() => subscriber.hdel(this.keys.fleet, this.name))
      .then(
        () => true,
        () => false,
      );
    const late = new Promise<false>((resolve) => setTimeout(() => resolve(false), LEAVE_WAIT_MS).unref());
    await Promise.race([left, late]);
    subscriber.disconnect();
  }

  /**
   * Results the agents of a worker that died here spooled as they finished (./adopt.ts): kept as
   * their jobs' reports, which the broker takes instead of running those jobs again.
   */
  private async adoptSpooled(client: Awaited<Worker['client']>): Promise<void> {
    for (const { jobId, report } of spooledReports(this.endpointDir, this.name)) {
      await client.set(this.keys.report(jobId), JSON.stringify(report), 'EX', REPORT_KEPT_SECONDS, 'NX');
      this.logger.info(`worker ${this.name}: adopted the spooled result of job ${jobId}, whose worker died`);
    }
  }

  private async beat(): Promise<void> {
    const entry: FleetEntry = {
      name: this.name,
      host: os.hostname(),
      pid: process.pid,
      concurrency: this.concurrency,
      running: this.running.size,
      at: Date.now(),
    };
    const client = await this.worker.client;
    await client.hset(this.keys.fleet, this.name, JSON.stringify(entry));
  }

  private control(message: ControlMessage): void {
    const job = this.running.get(message.jobId);
    if (!job) return;
    if (message.t === 'stored') return void this.takeStored(message.jobId, message.key);
    if (message.t === 'stop') job.attempt.stop(message.reason, message.message);
    else if (message.message.type === 'answer') job.replies.get(message.message.ask_id)?.(message.message);
    else if (message.message.type === 'tool_result') {
      const reply = job.toolReplies.get(message.message.call_id);
      job.toolReplies.delete(message.message.call_id);
      reply?.(message.message);
    } else for (const reply of job.replies.values()) reply(message.message);
  }

  /** A control message too long to publish, taken from its key (only one under this job's prefix). */
  private async takeStored(jobId: string, key: string): Promise<void> {
    if (!key.startsWith(this.keys.stored(jobId))) return;
    const client = await this.worker.client;
    const text = await client.getdel(key).catch(() => null);
    const message = text === null ? undefined : (JSON.parse(text) as ControlMessage);
    if (message && message.t !== 'stored' && message.jobId === jobId) this.control(message);
  }

  private async process(job: Job<AttemptJob, AttemptReport>): Promise<AttemptReport> {
    const data = job.data;
    const report = (outcome: AttemptReport['outcome']): AttemptReport => ({
      worker: this.name,
      outcome,
      exitCode: undefined,
      exitSignal: undefined,
    });
    const allowed = this.options.allow.admit(data);
    if (typeof allowed === 'string') {
      this.logger.warn(`worker ${this.name}: task ${data.taskId}: ${allowed}`);
      return report({ kind: 'failure', reason: 'refused', message: `worker ${this.name} ${allowed}`, retryable: false });
    }
    const client = await this.worker.client;
    const stopped = await client.get(this.keys.stop(job.id!));
    if (stopped) return report({ kind: 'failure', reason: 'cancelled', message: 'was cancelled before it started', retryable: false });

    // Redis unreachable or slower than the agent for long: stop rather than hold or drop its partials.
    const behind = (chars: number) =>
      `worker ${this.name} fell ${Math.round(chars / 1024 / 1024)} MiB behind reporting the attempt's partials to Redis`;
    const reporter = new Reporter(job, (chars) => attempt.stop('cancelled', `${behind(chars)}; stopping it`));
    reporter.push({ t: 'placed', worker: this.name });
    const replies = new Map<string, (message: BrokerMessage) => void>();
    const toolReplies = new Map<string, (message: BrokerMessage) => void>();
    let pid: number | undefined;
    const spawned = (agent: number) => {
      pid = agent;
      this.keeper?.started(agent);
    };
    const attempt = new Attempt(this.settings(data, allowed), forwardingSink(reporter, replies, toolReplies, spawned));
    this.running.set(job.id!, { attempt, replies, toolReplies });
    noteJob(this.endpointDir, data.taskId, job.id!);
    try {
      await attempt.start();
      let outcome = await attempt.outcome;
      // Kept at once, before the agent's exit is awaited: a worker killed meanwhile loses no result.
      // Its agent is acked once that report is in Redis (an acked agent exits without spooling).
      const kept = outcome.kind === 'final' && reporter.overflowed === undefined ? this.keepEarly(client, job.id!, outcome) : undefined;
      void (kept ?? Promise.resolve()).then(() => attempt.acknowledge());
      await attempt.finished;
      // A stopped agent's answer to the stop goes back with the failure: the broker keeps it (docs/protocol.md §8).
      if (outcome.kind === 'failure' && attempt.answer) outcome = { ...outcome, answer: attempt.answer };
      if (this.closing && outcome.kind === 'failure') {
        // Stopped because this worker shuts down, not by the task's owner: the broker may retry it elsewhere.
        outcome = { kind: 'failure', reason: 'crashed', message: `worker ${this.name} shut down during the attempt`, retryable: true };
      }
      if (reporter.overflowed !== undefined) {
        // Whatever the agent answered, its partials did not all reach the broker: never a result with a gap.
        const refused = reporter.refused > 0 ? ` (${reporter.refused} later partials not sent)` : '';
        outcome = { kind: 'failure', reason: 'crashed', message: `${behind(reporter.overflowed)}${refused}`, retryable: true };
      }
      await reporter.flush();
      if (outcome.kind === 'final') outcome.payload = { ...outcome.payload, meta: { ...outcome.payload.meta, worker: this.name } };
      const finished: AttemptReport = { worker: this.name, outcome, exitCode: attempt.exitCode, exitSignal: attempt.exitSignal };
      // Kept under its own key first (ioredis holds the command until Redis is back): after an outage
      // longer than the lock, BullMQ refuses the job's completion, and the broker takes the report from here.
      await client.set(this.keys.report(job.id!), JSON.stringify(finished), 'EX', REPORT_KEPT_SECONDS).catch((error: Error) => {
        this.logger.warn(`worker ${this.name}: could not keep the report of job ${job.id}: ${error.message}`);
      });
      return finished;
    } finally {
      this.running.delete(job.id!);
      forgetJob(this.endpointDir, data.taskId);
      // Its processes are gone (`finished`), or it never started: the keeper forgets the pid.
      if (pid !== undefined) this.keeper?.ended(pid);
    }
  }

  /** Keeps a final outcome as the job's report now; the whole report (exit code, signal) replaces it. */
  private async keepEarly(
    client: Awaited<Worker['client']>,
    jobId: string,
    outcome: AttemptReport['outcome'] & { kind: 'final' },
  ): Promise<void> {
    const payload = { ...outcome.payload, meta: { ...outcome.payload.meta, worker: this.name } };
    const early: AttemptReport = { worker: this.name, outcome: { ...outcome, payload }, exitCode: undefined, exitSignal: undefined };
    await client.set(this.keys.report(jobId), JSON.stringify(early), 'EX', REPORT_KEPT_SECONDS).catch(() => {});
  }

  /** The job's attempt as admitted: the worker's own command line and directory for it (an ACP agent under its own adapter). */
  private settings(job: AttemptJob, admitted: Admitted): AttemptSettings {
    const launch = job.acp ? acpLaunch(admitted, job.acp.settings) : undefined;
    return {
      taskId: job.taskId,
      attempt: job.attempt,
      command: launch?.command ?? admitted.command,
      args: launch?.args ?? admitted.args,
      cwd: admitted.cwd ?? process.cwd(),
      env: launch ? { ...this.baseEnv, [ACP_SETTINGS_ENV]: launch.settings } : this.baseEnv,
      input: job.input,
      ...(job.tools ? { tools: job.tools } : {}),
      timeoutMs: job.timeoutMs,
      heartbeatTimeoutMs: job.heartbeatTimeoutMs,
      ...(job.watchdogFromFirstHeartbeat === true ? { watchdogFromFirstHeartbeat: true } : {}),
      endpointDir: this.endpointDir,
      spoolDir: this.endpointDir,
      limits: DEFAULT_CHANNEL_LIMITS,
      cancelGraceMs: DEFAULTS.cancelGraceMs,
      killGraceMs: DEFAULTS.killGraceMs,
      drainMs: DEFAULTS.drainMs,
      traceLines: false,
      requireToken: false,
      // A worker's agents share the CPU as a hub's do (src/broker/process/agent-weight.ts).
      agentCpu: 'shared',
    };
  }
}

/** The attempt's reports, queued in order for the broker. */
function forwardingSink(
  reporter: Reporter,
  replies: Map<string, (message: BrokerMessage) => void>,
  toolReplies: Map<string, (message: BrokerMessage) => void>,
  spawned: (pid: number) => void,
): AttemptSink {
  return {
    partial: (payload) => reporter.push({ t: 'partial', payload }),
    log: (stream, text, event) => reporter.push(event ? { t: 'log', stream, text, event } : { t: 'log', stream, text }),
    problem: (kind, detail, facts) => reporter.push(facts ? { t: 'problem', kind, detail, facts } : { t: 'problem', kind, detail }),
    ask: (message, reply) => {
      replies.set(message.ask_id, reply);
      reporter.push({ t: 'ask', message }, true);
    },
    toolCall: (message, reply) => {
      // A call under an id that still waits is the broker's to refuse; its reply must reach the agent too.
      const earlier = toolReplies.get(message.call_id);
      toolReplies.set(message.call_id, earlier ? (result) => (toolReplies.set(message.call_id, earlier), reply(result)) : reply);
      reporter.push({ t: 'tool_call', message }, true);
    },
    spawned,
  };
}
