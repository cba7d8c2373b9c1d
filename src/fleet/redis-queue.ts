/**
 * `redisQueue()`: the broker's `AttemptQueue` over BullMQ. Each attempt becomes one job; workers
 * (./worker.ts) run it and report through job progress and the job's return value, which one
 * `QueueEvents` reader routes to the waiting `RemoteAttempt`.
 *
 * The broker keeps its own retry loop: a job is tried once by BullMQ (`attempts: 1`) and a job whose
 * worker died is failed by BullMQ's stalled-job check (`maxStalledCount: 0` on the workers), which
 * the broker runs again once on another worker (RemoteAttempt.lost), then counts as a crashed
 * attempt and retries per the task's policy.
 */
import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import type { AttemptQueue } from '../broker/queue/attempt-queue.js';
import type { StopReason } from '../broker/task/attempt.js';
import type { WorkerInfo } from '../model/fleet.js';
import { FleetConnection } from './connection.js';
import { RemoteAttempt, type AttemptHub } from './remote-attempt.js';
import {
  connectionOf,
  DEFAULT_QUEUE_NAME,
  keys,
  MAX_PUBLISHED_CHARS,
  PREFIX,
  STORED_MESSAGE_SECONDS,
  type AttemptReport,
  type ControlMessage,
  type ProgressBatch,
} from './wire.js';

export interface RedisQueueOptions {
  /** `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS. */
  redis: string;
  /** Queue name; workers must use the same. @default 'agents' */
  name?: string;
  /** TLS options (e.g. `{ ca }`) for `rediss://`. */
  tls?: Record<string, unknown>;
  /** Attempts the broker keeps queued or running on the fleet at once. @default 1000 */
  concurrency?: number;
  /** Finished jobs kept in Redis this long, for inspection. @default 3600 */
  keepFinishedSeconds?: number;
}

/** A fleet heartbeat entry, as workers write it (./worker.ts). */
export interface FleetEntry {
  name: string;
  host: string;
  pid: number;
  concurrency: number;
  running: number;
  at: number;
}

/** Workers beat every second; one silent for 5 minutes is dropped from the fleet view. */
const FORGET_WORKER_AFTER_MS = 5 * 60_000;

/** A failed job's report is looked for at least this long before its attempt counts as crashed. */
const LOST_JOB_GRACE_MS = 3_000;
/** A worker that has not beaten (every second) for this long is gone. */
const WORKER_SILENT_MS = 5_000;
const LOST_JOB_POLL_MS = 250;

/** How long close() waits for BullMQ's graceful close before cutting the connections. */
const CLOSE_GRACE_MS = 5_000;

class RedisQueue implements AttemptQueue, AttemptHub {
  readonly kind = 'redis';
  readonly concurrency: number;
  private readonly queue: Queue;
  private events: QueueEvents | undefined;
  private readonly keys: ReturnType<typeof keys>;
  private readonly pending = new Map<string, RemoteAttempt>();
  private readonly ready: Promise<unknown>;
  private readonly keepSeconds: number;

  constructor(options: RedisQueueOptions) {
    const name = options.name ?? DEFAULT_QUEUE_NAME;
    const connection = connectionOf(options.redis, options.tls);
    this.concurrency = options.concurrency ?? 1000;
    this.keepSeconds = options.keepFinishedSeconds ?? 3600;
    this.keys = keys(name);
    this.queue = new Queue(name, { connection, prefix: PREFIX }, FleetConnection);
    // Connection errors are retried by ioredis; without a listener they would crash the process.
    this.queue.on('error', () => {});
    this.ready = this.listen(name, connection);
    this.ready.catch(() => {});
  }

  /**
   * Reads the queue's event stream from its current end. Not from `$` (QueueEvents' default): the
   * reader's first XREAD may come after the first jobs already finished, and their events would be lost.
   */
  private async listen(name: string, connection: ReturnType<typeof connectionOf>): Promise<void> {
    const client = await this.queue.client;
    const [last] = await client.xrevrange(`${PREFIX}:${name}:events`, '+', '-', 'COUNT', 1);
    const events = new QueueEvents(name, { connection, prefix: PREFIX, lastEventId: last?.[0] ?? '0-0' }, FleetConnection);
    this.events = events;
    events.on('error', () => {});
    this.listenTo(events);
    await events.waitUntilReady();
  }

  private listenTo(events: QueueEvents): void {
    events.on('progress', ({ jobId, data }) => this.pending.get(jobId)?.onEvents((data ?? {}) as unknown as ProgressBatch));
    events.on('completed', ({ jobId, returnvalue }) => {
      this.pending.get(jobId)?.onCompleted(returnvalue as unknown as AttemptReport);
      void this.queue.client.then((client) => client.del(this.keys.report(jobId))).catch(() => {});
    });
    events.on('failed', ({ jobId, failedReason }) => {
      const attempt = this.pending.get(jobId);
      if (attempt) void this.lostOrKept(attempt, failedReason);
    });
    events.on('removed', ({ jobId }) => this.pending.get(jobId)?.failed('the job was removed from the queue', false));
  }

  /**
   * A job BullMQ failed (its lock expired: the worker died, or could not renew it while Redis was
   * down). A worker that is alive finishes the attempt and keeps its report under its own key; so
   * while the job's worker still beats, the report is waited for, and only a worker gone (no beat for
   * WORKER_SILENT_MS, past LOST_JOB_GRACE_MS) makes the attempt lost: its agents died with their
   * worker (./keeper.ts), so it runs again elsewhere, once. Nothing runs twice at the same time.
   */
  private async lostOrKept(attempt: RemoteAttempt, failedReason: string): Promise<void> {
    const since = Date.now();
    for (;;) {
      if (attempt.isDone) return;
      try {
        const client = await this.queue.client;
        const kept = await client.get(this.keys.report(attempt.jobId));
        if (kept) {
          attempt.onCompleted(JSON.parse(kept) as AttemptReport);
          await client.del(this.keys.report(attempt.jobId));
          return;
        }
        const beat = attempt.worker ? await client.hget(this.keys.fleet, attempt.worker) : null;
        const silentFor = beat ? Date.now() - (JSON.parse(beat) as FleetEntry).at : Infinity;
        if (Date.now() - since >= LOST_JOB_GRACE_MS && silentFor > WORKER_SILENT_MS) {
          attempt.lost(`the worker ${attempt.worker ?? '(unknown)'} lost the job: ${failedReason}`);
          return;
        }
      } catch {
        // Redis is away again: ask once it is back.
      }
      await new Promise((resolve) => setTimeout(resolve, LOST_JOB_POLL_MS));
    }
  }

  attempt(...[settings, sink]: Parameters<AttemptQueue['attempt']>): RemoteAttempt {
    return new RemoteAttempt(this, settings, sink);
  }

  async add(attempt: RemoteAttempt): Promise<void> {
    await this.ready;
    this.pending.set(attempt.jobId, attempt);
    const keep = { age: this.keepSeconds };
    await this.queue.add('attempt', attempt.job, { jobId: attempt.jobId, attempts: 1, removeOnComplete: keep, removeOnFail: keep });
  }

  async stop(jobId: string, reason: StopReason, message: string): Promise<boolean> {
    const client = await this.queue.client;
    // A worker that takes the job later finds this key; one running it now hears the message.
    await client.set(this.keys.stop(jobId), reason, 'EX', 24 * 3600);
    this.send({ t: 'stop', jobId, reason, message });
    return (await this.queue.remove(jobId)) === 1;
  }

  send(message: ControlMessage): void {
    const text = JSON.stringify(message);
    void this.queue.client
      .then(async (client) => {
        if (text.length <= MAX_PUBLISHED_CHARS) return void (await client.publish(this.keys.control, text));
        const key = this.keys.stored(message.jobId) + randomUUID();
        await client.set(key, text, 'EX', STORED_MESSAGE_SECONDS);
        const stored: ControlMessage = { t: 'stored', jobId: message.jobId, key };
        await client.publish(this.keys.control, JSON.stringify(stored));
      })
      .catch(() => {});
  }

  forget(jobId: string): void {
    this.pending.delete(jobId);
  }

  async fleet(): Promise<WorkerInfo[]> {
    const client = await this.queue.client;
    const entries = Object.values(await client.hgetall(this.keys.fleet)).map((text) => JSON.parse(text) as FleetEntry);
    const now = Date.now();
    // A worker silent this long was killed without leaving the fleet: forget it.
    const gone = entries.filter((entry) => now - entry.at > FORGET_WORKER_AFTER_MS).map((entry) => entry.name);
    if (gone.length > 0) await client.hdel(this.keys.fleet, ...gone);
    return entries
      .filter((entry) => !gone.includes(entry.name))
      .map(({ at, ...entry }) => ({ ...entry, heartbeatAgeMs: Math.max(0, now - at) }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Closes the queue's Redis connections. BullMQ's graceful close waits for blocking reads to return;
   * past CLOSE_GRACE_MS the connections are cut instead, so a broker's close() never hangs on Redis.
   */
  async close(): Promise<void> {
    const graceful = Promise.all([this.events?.close(), this.queue.close()]).then(() => true);
    const timer = new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_GRACE_MS).unref());
    if (await Promise.race([graceful, timer])) return;
    await Promise.all([this.events?.disconnect(), this.queue.disconnect()]).catch(() => {});
  }
}

/** The broker option `queue: redisQueue({ redis: 'redis://…', name })`: attempts run on `backchannel worker`s. */
export function redisQueue(options: RedisQueueOptions): AttemptQueue {
  return new RedisQueue(options);
}
