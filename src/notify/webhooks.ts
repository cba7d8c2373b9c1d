/**
 * Webhooks for task events, signed per Standard Webhooks (the `standardwebhooks` package):
 * `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>`. Guarantees:
 * - never blocks the broker: an event is queued in memory and delivered in the background;
 * - retried with backoff (RETRY_DELAYS_MS) on a network error, a timeout or a non-2xx answer, with
 *   the same id and body each time (a receiver can de-duplicate by `webhook-id`);
 * - whoever answers for a URL cannot exhaust the hub: at most MAX_ANSWER_BYTES of an answer are read
 *   before the connection is dropped (Y54); a redirect is a failure, never followed (Y34); at most
 *   MAX_PARALLEL_PER_URL deliveries to a URL are in flight, one while it fails, and a failing URL
 *   is tried less and less often (Y36); at most MAX_WAITING_PER_URL events wait per URL;
 * - each delivery attempt is logged (the URL's host only, event, id, status), never the secret nor
 *   the URL's path or query, which may hold a key (Y32);
 * - `close()` stops retrying, drops what is in flight and waits for no one.
 * A channel of ./index.ts: it is told the one vocabulary's announcements (./events.ts) and posts those
 * each URL asked for; what is news is decided there, not here.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../broker/log.js';
import type { TaskSnapshot } from '../model/task.js';
import type { Channel } from './channel.js';
import type { WebhookTarget } from './config.js';
import type { Announcement, NotifyEvent, ScheduleSkip } from './events.js';

/** Waits before each retry: a receiver down for a few seconds (a restart) still gets the event. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 16000, 32000] as const;
/** One attempt's answer must come within this long. */
const REQUEST_TIMEOUT_MS = 10_000;
/** The status is what counts; this much of the answer is read at most, then the connection is dropped. */
export const MAX_ANSWER_BYTES = 4096;
/** Deliveries in flight to one URL while it answers well; while it fails, one at a time. */
export const MAX_PARALLEL_PER_URL = 4;
/** Events waiting for one URL; past this the oldest waiting one is dropped (logged). */
export const MAX_WAITING_PER_URL = 1000;

/** The JSON each webhook gets: `{type, timestamp, data: {task}}` (Standard Webhooks' recommended envelope). */
export interface WebhookBody {
  type: NotifyEvent;
  timestamp: string;
  data: { task: Pick<TaskSnapshot, 'id' | 'label' | 'state' | 'reason' | 'message' | 'usage' | 'pendingQuestion' | 'endedAt'> };
}

/** The JSON of `schedule_skipped`: `{type, timestamp, data: {schedule}}`. */
export interface ScheduleSkippedBody {
  type: 'schedule_skipped';
  timestamp: string;
  data: { schedule: ScheduleSkip };
}

export interface WebhookNotifierOptions {
  targets: readonly WebhookTarget[];
  logger: Logger;
  /** @default RETRY_DELAYS_MS; also the growing pause between a failing URL's attempts */
  retryDelaysMs?: readonly number[];
  /** @default 10_000 */
  requestTimeoutMs?: number;
}

/** One event on its way to one URL. */
interface Job {
  readonly id: string;
  readonly type: NotifyEvent;
  readonly json: string;
  attempt: number;
}

/** One URL: its signer, what waits for it, what is in flight, and how it fared lately. */
interface Lane {
  readonly target: WebhookTarget;
  readonly webhook: Webhook;
  /** What the log names: the host, never the path or query. */
  readonly where: string;
  readonly waiting: Job[];
  readonly inFlight: Set<ClientRequest>;
  /** Failed attempts in a row (0: the last one was delivered). */
  failures: number;
  /** No attempt starts before this (ms since the epoch): the pause after a failure. */
  resumeAt: number;
  timer: NodeJS.Timeout | undefined;
}

export class WebhookNotifier implements Channel {
  private readonly lanes: Lane[];
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly options: WebhookNotifierOptions) {
    this.lanes = options.targets.map((target) => ({
      target,
      webhook: new Webhook(target.secret),
      where: hostOf(target.url),
      waiting: [],
      inFlight: new Set(),
      failures: 0,
      resumeAt: 0,
      timer: undefined,
    }));
  }

  /** Queues `announcement` for every webhook that asked for its event; returns at once. */
  readonly announce = (announcement: Announcement): void => {
    if (this.lanes.length === 0) return;
    const timestamp = new Date().toISOString();
    if (announcement.type === 'schedule_skipped') {
      const body: ScheduleSkippedBody = { type: 'schedule_skipped', timestamp, data: { schedule: skipFacts(announcement.skip) } };
      this.send('schedule_skipped', JSON.stringify(body));
      return;
    }
    const body: WebhookBody = { type: announcement.type, timestamp, data: { task: taskFacts(announcement.task) } };
    this.send(announcement.type, JSON.stringify(body));
  };

  private send(type: NotifyEvent, json: string): void {
    if (this.closed) return;
    for (const lane of this.lanes) {
      if (!lane.target.events.includes(type)) continue;
      if (lane.waiting.length >= MAX_WAITING_PER_URL) {
        const dropped = lane.waiting.shift()!;
        this.options.logger.warn(
          `webhook ${dropped.type} ${dropped.id} to ${lane.where}: dropped, ${MAX_WAITING_PER_URL} events wait already`,
        );
      }
      lane.waiting.push({ id: `msg_${randomUUID()}`, type, json, attempt: 0 });
      this.pump(lane);
    }
  }

  /** Stops: no further attempt starts, and the ones in flight are dropped. */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const lane of this.lanes) {
      clearTimeout(lane.timer);
      lane.waiting.length = 0;
      for (const request of lane.inFlight) request.destroy();
    }
  }

  /** Starts what the lane allows now: up to its parallelism, once its pause after a failure is over. */
  private pump(lane: Lane): void {
    if (this.closed || lane.timer) return;
    const wait = lane.resumeAt - Date.now();
    if (wait > 0 && lane.waiting.length > 0) {
      lane.timer = setTimeout(() => {
        lane.timer = undefined;
        this.pump(lane);
      }, wait);
      lane.timer.unref();
      return;
    }
    const limit = lane.failures > 0 ? 1 : MAX_PARALLEL_PER_URL;
    while (lane.inFlight.size < limit && lane.waiting.length > 0) void this.deliver(lane, lane.waiting.shift()!);
  }

  private async deliver(lane: Lane, job: Job): Promise<void> {
    const now = new Date();
    const headers = {
      'content-type': 'application/json',
      'webhook-id': job.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': lane.webhook.sign(job.id, now, job.json),
    };
    const timeoutMs = this.options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const outcome = await post(lane.target.url, headers, job.json, timeoutMs, lane.inFlight);
    if (this.closed) return;
    const { logger } = this.options;
    const what = `webhook ${job.type} ${job.id} to ${lane.where}`;
    if (outcome.delivered) {
      lane.failures = 0;
      lane.resumeAt = 0;
      logger.info(`${what}: delivered (HTTP ${outcome.status}, attempt ${job.attempt + 1})`);
      this.pump(lane);
      return;
    }
    const delays = this.options.retryDelaysMs ?? RETRY_DELAYS_MS;
    lane.failures += 1;
    lane.resumeAt = Date.now() + (delays[Math.min(lane.failures, delays.length) - 1] ?? 0);
    const delay = delays[job.attempt];
    if (delay === undefined) {
      logger.warn(`${what}: ${outcome.text}, attempt ${job.attempt + 1}; giving up`);
    } else {
      logger.info(`${what}: ${outcome.text}, attempt ${job.attempt + 1}; retrying in ${delay} ms`);
      job.attempt += 1;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        lane.waiting.unshift(job);
        this.pump(lane);
      }, delay);
      timer.unref();
      this.timers.add(timer);
    }
    this.pump(lane);
  }
}

type Outcome = { delivered: true; status: number } | { delivered: false; text: string };

/**
 * POSTs `body` to `url` on a connection of its own (no redirect is followed: node:http does not), and
 * reads at most MAX_ANSWER_BYTES of the answer before dropping the connection. Never rejects.
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  inFlight: Set<ClientRequest>,
): Promise<Outcome> {
  return new Promise((resolve) => {
    let status: number | undefined;
    let settled = false;
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const request = send(url, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
    const finish = (failure?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      inFlight.delete(request);
      request.destroy();
      if (status !== undefined && status >= 200 && status < 300) resolve({ delivered: true, status });
      else if (status !== undefined && status >= 300 && status < 400)
        resolve({ delivered: false, text: `HTTP ${status}, a redirect (not followed)` });
      else if (status !== undefined) resolve({ delivered: false, text: `HTTP ${status}` });
      else resolve({ delivered: false, text: failure ?? 'failed' });
    };
    const deadline = setTimeout(() => finish('TimeoutError'), timeoutMs);
    deadline.unref();
    inFlight.add(request);
    request.on('response', (response: IncomingMessage) => {
      status = response.statusCode;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) finish();
      });
      response.on('end', () => finish());
      response.on('error', () => finish());
    });
    request.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? error.name));
    request.on('close', () => finish('closed'));
    request.end(body);
  });
}

/** `host[:port]` of a URL: what the log may say of it. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(an invalid URL)';
  }
}

function skipFacts(skip: ScheduleSkip): ScheduleSkip {
  const { schedule, at, until, count, reason } = skip;
  return { schedule, at, reason, ...(until !== undefined ? { until } : {}), ...(count !== undefined ? { count } : {}) };
}

function taskFacts(task: TaskSnapshot): WebhookBody['data']['task'] {
  const { id, label, state, reason, message, usage, pendingQuestion, endedAt } = task;
  return Object.fromEntries(
    Object.entries({ id, label, state, reason, message, usage, pendingQuestion, endedAt }).filter(([, v]) => v !== undefined),
  ) as WebhookBody['data']['task'];
}
