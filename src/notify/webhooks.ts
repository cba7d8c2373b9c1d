/**
 * Webhooks for task events, signed per Standard Webhooks (the `standardwebhooks` package):
 * `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>`. Guarantees:
 * - never blocks the broker: an event is queued in memory and delivered in the background;
 * - retried with backoff (RETRY_DELAYS_MS) on a network error, a timeout or a non-2xx answer, with
 *   the same id and body each time (a receiver can de-duplicate by `webhook-id`);
 * - each delivery attempt is logged (url, event, id, status), never the secret;
 * - `close()` stops retrying and waits for no one.
 * Events: `ended` (a task ended, any state), `needs_input` (it asked a question), `budget_exceeded`
 * (it ended over its budget; also an `ended`).
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../broker/log.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import type { NotifyEvent, WebhookTarget } from './config.js';

/** Waits before each retry: a receiver down for a few seconds (a restart) still gets the event. */
export const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 16000, 32000] as const;
/** One attempt's answer must come within this long. */
const REQUEST_TIMEOUT_MS = 10_000;

/** The JSON each webhook gets: `{type, timestamp, data: {task}}` (Standard Webhooks' recommended envelope). */
export interface WebhookBody {
  type: NotifyEvent;
  timestamp: string;
  data: { task: Pick<TaskSnapshot, 'id' | 'label' | 'state' | 'reason' | 'message' | 'usage' | 'pendingQuestion' | 'endedAt'> };
}

/** A skipped fire of a schedule, as `schedule_skipped` tells it (times in ms since the epoch). */
export interface ScheduleSkip {
  schedule: string;
  at: number;
  /** When the record stands for a run of skipped fires: the last one, and how many (when known). */
  until?: number;
  count?: number;
  reason: 'overlap' | 'paused' | 'hub_down' | 'budget_spent' | 'refused';
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
  /** Reads a task's snapshot when one of its updates is an event. */
  snapshot(id: string): TaskSnapshot | undefined;
  /** @default RETRY_DELAYS_MS */
  retryDelaysMs?: readonly number[];
}

export class WebhookNotifier {
  private readonly signers: Array<{ target: WebhookTarget; webhook: Webhook }>;
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly options: WebhookNotifierOptions) {
    this.signers = options.targets.map((target) => ({ target, webhook: new Webhook(target.secret) }));
  }

  /** Feed it the broker's updates (`broker.on('update', notifier.onUpdate)`); returns at once. */
  readonly onUpdate = (update: TaskUpdate): void => {
    if (this.signers.length === 0 || (update.kind !== 'ended' && update.kind !== 'ask')) return;
    const task = this.options.snapshot(update.taskId);
    if (!task) return;
    if (update.kind === 'ask') this.emit('needs_input', task);
    else {
      this.emit('ended', task);
      if (task.reason === 'budget_exceeded') this.emit('budget_exceeded', task);
    }
  };

  /** Queues `event` for every webhook that asked for it. */
  emit(type: NotifyEvent, task: TaskSnapshot): void {
    const body: WebhookBody = { type, timestamp: new Date().toISOString(), data: { task: taskFacts(task) } };
    this.send(type, JSON.stringify(body));
  }

  /** Queues `schedule_skipped` (a fire the hub's scheduler recorded as skipped) for every webhook that asked for it. */
  readonly scheduleSkipped = (skip: ScheduleSkip): void => {
    const { schedule, at, until, count, reason } = skip;
    const facts: ScheduleSkip = {
      schedule,
      at,
      reason,
      ...(until !== undefined ? { until } : {}),
      ...(count !== undefined ? { count } : {}),
    };
    const body: ScheduleSkippedBody = { type: 'schedule_skipped', timestamp: new Date().toISOString(), data: { schedule: facts } };
    this.send('schedule_skipped', JSON.stringify(body));
  };

  private send(type: NotifyEvent, json: string): void {
    if (this.closed) return;
    for (const signer of this.signers) {
      if (signer.target.events.includes(type)) void this.deliver(signer, `msg_${randomUUID()}`, type, json, 0);
    }
  }

  /** Stops: no further attempt starts (one in flight finishes by itself). */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private async deliver(signer: { target: WebhookTarget; webhook: Webhook }, id: string, type: NotifyEvent, json: string, attempt: number) {
    if (this.closed) return;
    const { url } = signer.target;
    const now = new Date();
    const headers = {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signer.webhook.sign(id, now, json),
    };
    let outcome: string;
    try {
      const response = await fetch(url, { method: 'POST', headers, body: json, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) {
        this.options.logger.info(`webhook ${type} ${id} to ${url}: delivered (HTTP ${response.status}, attempt ${attempt + 1})`);
        return;
      }
      outcome = `HTTP ${response.status}`;
    } catch (error) {
      outcome = ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name) || 'failed';
    }
    const delays = this.options.retryDelaysMs ?? RETRY_DELAYS_MS;
    const delay = delays[attempt];
    if (delay === undefined || this.closed) {
      this.options.logger.warn(`webhook ${type} ${id} to ${url}: ${outcome}, attempt ${attempt + 1}; giving up`);
      return;
    }
    this.options.logger.info(`webhook ${type} ${id} to ${url}: ${outcome}, attempt ${attempt + 1}; retrying in ${delay} ms`);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.deliver(signer, id, type, json, attempt + 1);
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }
}

function taskFacts(task: TaskSnapshot): WebhookBody['data']['task'] {
  const { id, label, state, reason, message, usage, pendingQuestion, endedAt } = task;
  return Object.fromEntries(
    Object.entries({ id, label, state, reason, message, usage, pendingQuestion, endedAt }).filter(([, v]) => v !== undefined),
  ) as WebhookBody['data']['task'];
}
