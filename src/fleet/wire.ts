/**
 * What travels through Redis between the broker (the queue side) and the workers, and where: one
 * BullMQ job per attempt, the worker's reports as job progress, the attempt's outcome as the job's
 * return value, and stop/answer/tool-result messages on a pub/sub channel. Both sides import this file only.
 */
import type { AskMessage, BrokerMessage, OfferedTool, Payload, ToolCallMessage } from '../protocol/index.js';
import type { AttemptOutcome, StopReason } from '../broker/task/attempt.js';
import type { ProblemFacts } from '../broker/task/task.js';
import type { LogEvent, ProblemKind } from '../model/task.js';
import { reportedUsage } from '../model/usage.js';
import type { ConnectionOptions } from 'bullmq';
import { redactedUrl } from './redis-url.js';

/** BullMQ key prefix: every key of a fleet starts with `backchannel:<queue>:`. */
export const PREFIX = 'backchannel';
export const DEFAULT_QUEUE_NAME = 'agents';

/** One attempt, as queued. Never the broker's environment or paths: the worker uses its own. */
export interface AttemptJob {
  taskId: string;
  attempt: number;
  command: string;
  /** Including `--task-id=<id>` (last) unless the spec turned it off. */
  args: string[];
  /**
   * The template or preset this command line is (the broker's run policy named it): a worker runs
   * its own copy of that preset, or refuses the job. Absent: an exact command line, run only when
   * a worker's `--allow` prefix allows it.
   */
  preset?: string;
  input: unknown;
  /** The tools the task's caller hosts: the worker offers them to the agent, and relays its calls. */
  tools?: OfferedTool[];
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  /** The default watchdog, armed by the first heartbeat (AttemptSettings). */
  watchdogFromFirstHeartbeat?: boolean;
  /**
   * An ACP task (docs/acp.md): `command` and `args` are the agent's, judged as any job's; the worker
   * runs them under its own ACP adapter with these settings (BACKCHANNEL_ACP). A named agent's
   * environment stays on the hub: the worker's agent has the worker's.
   */
  acp?: { settings: string };
}

/** What a worker reports while an attempt runs, in order, batched into job progress. */
export type WorkerEvent =
  | { t: 'placed'; worker: string }
  | { t: 'partial'; payload: Payload }
  | { t: 'log'; stream: 'stdout' | 'stderr' | 'broker'; text: string; event?: LogEvent }
  | { t: 'problem'; kind: ProblemKind; detail: string; facts?: ProblemFacts }
  | { t: 'ask'; message: AskMessage }
  | { t: 'tool_call'; message: ToolCallMessage };

/** One job-progress message: a worker's events in order; `seq` counts a job's messages from 0. */
export interface ProgressBatch {
  seq: number;
  events: WorkerEvent[];
}

/** The fields a progress-only partial's data may have: the bar's value and a status line. */
const PROGRESS_FIELDS = new Set(['progress', 'message']);

/**
 * A partial that says only how far the agent is: no data, or a plain object with nothing but a
 * numeric `progress` and a string `message` (docs/protocol.md §4). A later one supersedes it, so a
 * run of them may be coalesced to the latest. Anything else — a text delta (`{delta}`), a text
 * segment (`{text}`), a step, `{progress, step}` — is content, delivered whole and in order.
 */
export function isProgressOnly(payload: Payload): boolean {
  if (payload.status !== 'partial' || payload.attachments !== undefined) return false;
  // A usage report (the Python SDK's `task.meta(token_usage=…)`: no data) is counted by the budget: never dropped.
  if (payload.meta !== undefined && reportedUsage(payload.meta) !== undefined) return false;
  const data = payload.data;
  if (data === undefined || data === null) return true;
  if (typeof data !== 'object' || Array.isArray(data)) return false;
  for (const [key, value] of Object.entries(data)) {
    if (!PROGRESS_FIELDS.has(key)) return false;
    if (key === 'progress' && typeof value !== 'number') return false;
    if (key === 'message' && typeof value !== 'string') return false;
  }
  return true;
}

/**
 * `next` may replace `prev` (both progress-only partials): it sets every field `prev` set, so
 * nothing `prev` said is lost (a `{message}` after a `{progress}` does not replace it).
 */
export function supersedes(prev: Payload, next: Payload): boolean {
  if (!isProgressOnly(prev) || !isProgressOnly(next)) return false;
  const fields = (p: Payload) => (p.data === undefined || p.data === null ? [] : Object.keys(p.data));
  const set = new Set(fields(next));
  return fields(prev).every((key) => set.has(key));
}

/** The job's return value. */
export interface AttemptReport {
  worker: string;
  outcome: AttemptOutcome;
  exitCode: number | null | undefined;
  exitSignal: NodeJS.Signals | null | undefined;
}

/**
 * Broker → workers, on the control channel; the worker running `jobId` acts. `stored`: a message too
 * long to publish (MAX_PUBLISHED_CHARS) waits under `key`, which the worker takes (GETDEL) and acts on.
 */
export type ControlMessage =
  | { t: 'stop'; jobId: string; reason: StopReason; message: string }
  | { t: 'reply'; jobId: string; message: BrokerMessage }
  | { t: 'stored'; jobId: string; key: string };

/**
 * The longest control message published whole. Redis closes a subscriber whose pending output
 * passes 32 MB (its default `client-output-buffer-limit pubsub 32mb 8mb 60`): a 40 MB tool result
 * published whole cut the worker off from every stop and answer after it. A tool result may be as
 * long as a task's input (MAX_INPUT_BYTES, as on a local broker), so a longer message is stored
 * under its own key instead and only the key is published.
 */
export const MAX_PUBLISHED_CHARS = 1024 * 1024;
/** How long a stored control message waits for its worker (one whose job is gone never takes it). */
export const STORED_MESSAGE_SECONDS = 3600;

/** BullMQ refuses `:` in custom job ids. */
export function jobIdOf(taskId: string, attempt: number): string {
  return `${taskId}.${attempt}`;
}

export function keys(queueName: string) {
  const base = `${PREFIX}:${queueName}`;
  return {
    control: `${base}:control`,
    fleet: `${base}:fleet`,
    stop: (jobId: string) => `${base}:stop:${jobId}`,
    /** A worker's finished report, kept apart from the job: BullMQ refuses it once the job's lock expired. */
    report: (jobId: string) => `${base}:report:${jobId}`,
    /** Where control messages for `jobId` too long to publish wait (see MAX_PUBLISHED_CHARS). */
    stored: (jobId: string) => `${base}:stored:${jobId}:`,
  };
}

/**
 * Redis connection options from a URL: `redis://[user:password@]host[:port][/db]`, or `rediss://`
 * for TLS (`tls` adds options such as a CA). Commands wait through a reconnect instead of failing.
 */
export function connectionOf(url: string, tls?: Record<string, unknown>): ConnectionOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`Expected a Redis URL such as redis://127.0.0.1:6379, got \`${redactedUrl(url)}\``);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`Expected a redis:// or rediss:// URL, got \`${redactedUrl(url)}\``);
  }
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  return {
    host: parsed.hostname || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 6379,
    db: Number.isInteger(db) ? db : 0,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' || tls ? { tls: tls ?? {} } : {}),
    maxRetriesPerRequest: null,
    // Back off up to 1 s between reconnects: a restarted Redis is found again within a second.
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  };
}
