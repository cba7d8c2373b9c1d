/**
 * One logical turn runs once. The official SDKs retry a failed request by themselves (twice by
 * default, on 408, 409, 429, 5xx and connection errors) and some clients send a request again when
 * they lost the answer; each copy would start another sub-agent. Here a request identical to one
 * that is running, or that finished less than {@link IDEMPOTENCY_WINDOW_MS} ago, joins that run: it
 * gets the same stream (what was sent so far, then the rest as it comes) or the same result, and no
 * new agent starts.
 *
 * Identical means the same {@link TurnIdentity} key: the API, the caller's credential, its session
 * headers and the body's JSON value (its objects' keys in any order: Codex serialises its
 * `client_metadata` map in another order on each retry) — or, when the client sends an `Idempotency-Key`, that key,
 * bound to a hash of the body (model included): a request that reuses a key with another body is
 * refused with a 422 ({@link keyReused}, as the IETF Idempotency-Key draft answers), never given the
 * first run's answer.
 * The SDKs' own `x-stainless-retry-count` header says which attempt a request is: `0` is a new
 * logical request (two separate calls with the same body both run), above 0 is a retry (it joins).
 * A copy from a client that sends neither joins a run still going or one that failed, not a
 * finished answer: the same question asked again later is a new question.
 *
 * A client's **fallback** joins too: Claude Code, when a streamed request fails inside its stream,
 * asks again at once without streaming, with a new body (`stream: false`, a lower `max_tokens`) and
 * `x-stainless-retry-count: 0`. A request that differs from a running or failed run's only in
 * whether it streams and in its output-token cap (same {@link TurnIdentity.fallbackKey}, the other
 * `stream`) is that run's fallback: it gets that run's answer or failure, and no new agent starts.
 *
 * What is remembered: runs that reached an answer or a failure of the agent. A request refused before
 * any agent ran (unknown model, a full queue) is forgotten at once, and so is a run every client left
 * (its task was cancelled): a later copy runs anew. A run is cancelled when every request that
 * joined it has gone away, not when the first one does — for an SDK's request after
 * {@link RETRY_GRACE_MS}, so that the SDK's retry after its own timeout joins instead of starting over.
 *
 * Failures a retry cannot fix carry `x-should-retry: false` ({@link NO_RETRY}), which both official
 * SDKs obey; docs/gateway.md, "Retries", lists them.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { TaskHandle } from '../client/index.js';
import type { CancelWhy } from './request-task/index.js';
import { HttpError } from './http.js';
import type { Attempt, TurnIdentity } from './request.js';
import { headerSessionIds } from './sessions.js';

/**
 * How long a finished run is joined by copies of its request: longer than the SDKs' retry back-off
 * (0.5 s, 1 s, … at most 8 s, or a `Retry-After` the gateway never sets above 5 s), short enough
 * that asking the same thing again a minute later runs the agent again.
 */
export const IDEMPOTENCY_WINDOW_MS = 30_000;
/**
 * How long a run whose SDK client went away (its own timeout, a dropped connection) waits for that
 * client's retry before it is cancelled: the SDKs' first retry comes after at most 0.5 s. Clients
 * that send no SDK retry header are cancelled at once, as before.
 */
export const RETRY_GRACE_MS = 2_000;
/** Finished runs remembered at once (each holds its answer text), oldest first out. */
export const MAX_REMEMBERED_TURNS = 64;
/** The header both official SDKs read before retrying. */
export const NO_RETRY: Readonly<Record<string, string>> = { 'x-should-retry': 'false' };

/** The calls of an API's answer writer (./turn.ts `TurnWriter`), as a run makes them and its members get them. */
export interface SharedWriter {
  delta(text: string, task: TaskHandle): void;
  thinking(text: string, task: TaskHandle): void;
  toolCall(call: { id: string; name: string; arguments: unknown }, task: TaskHandle): void;
  finish(answer: unknown, task: TaskHandle | undefined): void;
  fail(error: HttpError, task: TaskHandle | undefined): void;
  close(): void;
}

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Body fields a client's non-streamed fallback of a streamed request changes (./turn-dedupe.ts header). */
const FALLBACK_FIELDS = new Set(['stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'max_output_tokens']);

/** A request's identity from its API, its parsed body and its headers. */
export function turnIdentity(api: string, body: unknown, headers: IncomingHttpHeaders): TurnIdentity {
  const idempotencyKey = header(headers, 'idempotency-key');
  const retryCount = header(headers, 'x-stainless-retry-count');
  const credential = header(headers, 'authorization') ?? header(headers, 'x-api-key') ?? '';
  const who = `${api}\0${credential}\0${headerSessionIds(headers).join('\0')}\0`;
  const hash = createHash('sha256').update(who);
  hash.update(idempotencyKey !== undefined ? `key\0${idempotencyKey}` : `body\0${canonicalJson(body)}`);
  const attempt: Attempt =
    idempotencyKey !== undefined ? 'retry' : retryCount === undefined ? 'unknown' : retryCount.trim() === '0' ? 'first' : 'retry';
  const stream = (body as { stream?: unknown } | null)?.stream === true;
  if (idempotencyKey !== undefined)
    return { key: hash.digest('hex'), attempt, stream, bodyHash: createHash('sha256').update(canonicalJson(body)).digest('hex') };
  const rest = isRecord(body) ? Object.fromEntries(Object.entries(body).filter(([field]) => !FALLBACK_FIELDS.has(field))) : body;
  const fallbackKey = createHash('sha256')
    .update(`${who}fallback\0${canonicalJson(rest)}`)
    .digest('hex');
  return { key: hash.digest('hex'), attempt, stream, fallbackKey };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value` as JSON text with every object's keys sorted: the same JSON value is the same text, in whatever order it came. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (isRecord(v) ? sortedKeys(v) : v));
}

/** A copy of `object` with its keys in sorted order (`fromEntries`: a key `__proto__` stays a plain key). */
function sortedKeys(object: Record<string, unknown>): Record<string, unknown> {
  const names = Object.keys(object).sort();
  return Object.fromEntries(names.map((name) => [name, object[name]]));
}

/**
 * The IETF Idempotency-Key draft's answer to a key reused with another payload (422, "Idempotency-Key
 * is already used"), in the API's own error shape: the SDKs read that, not `application/problem+json`.
 */
export function keyReused(): HttpError {
  return new HttpError(
    422,
    'Idempotency-Key is already used: it was sent with another request body (or model) less than ' +
      `${IDEMPOTENCY_WINDOW_MS / 1000} s ago. Use a new key for a new request.`,
    'invalid_request',
    'idempotency_key_reused',
    null,
    NO_RETRY,
  );
}

/** Runs one turn, writing its answer to `writer`; aborting `abort` cancels it. */
export type Produce = (abort: AbortController, writer: SharedWriter) => Promise<void>;

export interface TurnDedupe {
  /**
   * Runs `produce` for this request, or joins the identical run: `writer` gets the whole answer
   * either way. Rejects with what `produce` threw (each joined request answers it for itself).
   * `abort` is this request's own (aborted when its client goes away).
   */
  run(identity: TurnIdentity | undefined, abort: AbortController, writer: SharedWriter, produce: Produce): Promise<void>;
  /** Runs in flight or remembered. */
  readonly size: number;
  /** Forgets every run (the gateway closes; running ones are stopped by their own runner). */
  clear(): void;
}

export interface TurnDedupeOptions {
  /** @default IDEMPOTENCY_WINDOW_MS */
  windowMs?: number;
  /** @default RETRY_GRACE_MS */
  graceMs?: number;
  /** @default MAX_REMEMBERED_TURNS */
  maxRemembered?: number;
}

export function createTurnDedupe(options: TurnDedupeOptions = {}): TurnDedupe {
  const { windowMs = IDEMPOTENCY_WINDOW_MS, graceMs = RETRY_GRACE_MS, maxRemembered = MAX_REMEMBERED_TURNS } = options;
  const runs = new Map<string, SharedTurn>();
  /** The same runs by `fallbackKey`, for a client's fallback of a streamed request (see the file header). */
  const fallbacks = new Map<string, SharedTurn>();

  function forget(key: string, run: SharedTurn): void {
    if (runs.get(key) === run) runs.delete(key);
    if (run.fallbackKey !== undefined && fallbacks.get(run.fallbackKey) === run) fallbacks.delete(run.fallbackKey);
    clearTimeout(run.expiry);
  }

  /** The running or failed run whose fallback this request is: the same request, streamed the other way. */
  function fallbackOf(identity: TurnIdentity): SharedTurn | undefined {
    const run = identity.fallbackKey === undefined ? undefined : fallbacks.get(identity.fallbackKey);
    return run && run.stream !== identity.stream && run.joinableBy('unknown') ? run : undefined;
  }

  function remember(key: string, run: SharedTurn): void {
    run.expiry = setTimeout(() => forget(key, run), windowMs);
    run.expiry.unref();
    const finished = [...runs.entries()].filter(([, r]) => r.settled);
    for (const [oldKey, old] of finished.slice(0, Math.max(0, finished.length - maxRemembered))) forget(oldKey, old);
  }

  return {
    run(identity, abort, writer, produce) {
      if (identity === undefined) return produce(abort, writer);
      const joined = identity.attempt === 'first' ? undefined : runs.get(identity.key);
      if (joined && joined.bodyHash !== identity.bodyHash) return Promise.reject(keyReused());
      if (joined?.joinableBy(identity.attempt)) return joined.join(writer, abort, identity.attempt);
      const fallback = fallbackOf(identity);
      if (fallback) return fallback.join(writer, abort, identity.attempt);
      const run = new SharedTurn(graceMs, identity);
      runs.set(identity.key, run);
      if (identity.fallbackKey !== undefined) fallbacks.set(identity.fallbackKey, run);
      const done = run.join(writer, abort, identity.attempt);
      run.start(produce).then(
        (remembered) => (remembered ? remember(identity.key, run) : forget(identity.key, run)),
        () => {},
      );
      return done;
    },
    get size() {
      return runs.size;
    },
    clear() {
      for (const [key, run] of [...runs]) forget(key, run);
      fallbacks.clear();
    },
  };
}

/** A joined request: its writer and how its `run()` settles. */
interface Member {
  writer: SharedWriter;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * One run and every request that joined it: the writer calls are recorded and sent to each member,
 * a late member first gets the recording. The run's own AbortController is aborted with
 * `'disconnect'` when the last member's client has gone.
 */
class SharedTurn {
  readonly abort = new AbortController();
  expiry: NodeJS.Timeout | undefined;
  settled = false;
  private readonly calls: Array<(writer: SharedWriter) => void> = [];
  private readonly members = new Set<Member>();
  private outcome: { error: unknown } | undefined;
  private grace: NodeJS.Timeout | undefined;
  private failed = false;

  /** The body an `Idempotency-Key` is bound to (see `TurnIdentity.bodyHash`). */
  readonly bodyHash: string | undefined;
  /** The request without its streaming fields (see `TurnIdentity.fallbackKey`), and whether it streamed. */
  readonly fallbackKey: string | undefined;
  readonly stream: boolean;

  constructor(
    private readonly graceMs: number,
    identity: TurnIdentity,
  ) {
    this.bodyHash = identity.bodyHash;
    this.fallbackKey = identity.fallbackKey;
    this.stream = identity.stream === true;
  }

  /** False once every client left and the run is being cancelled: it will answer nobody. */
  get joinable(): boolean {
    return this.abort.signal.reason !== ('disconnect' satisfies CancelWhy);
  }

  /**
   * Whether a copy joins: a retry joins any joinable run; a copy that does not say it is one joins a
   * running run or a failed one, never a finished answer (asking the same again is a new question).
   */
  joinableBy(attempt: Attempt): boolean {
    return this.joinable && (attempt === 'retry' || !this.settled || this.failed);
  }

  /** Runs `produce`; resolves with whether copies may still join (an answer or a failure was written). */
  async start(produce: Produce): Promise<boolean> {
    try {
      await produce(this.abort, this.writer());
      this.outcome = { error: undefined };
      return this.joinable;
    } catch (error) {
      this.outcome = { error };
      return false; // refused before any agent ran: nothing to share
    } finally {
      this.settled = true;
      clearTimeout(this.grace);
      for (const member of [...this.members]) this.settle(member);
    }
  }

  join(writer: SharedWriter, abort: AbortController, attempt: Attempt): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const member: Member = { writer, resolve, reject };
      for (const call of this.calls) call(writer);
      if (this.settled) return this.settle(member);
      clearTimeout(this.grace);
      this.members.add(member);
      const leave = () => this.leave(member, attempt === 'unknown' ? 0 : this.graceMs);
      if (abort.signal.aborted) return leave();
      abort.signal.addEventListener('abort', leave, { once: true });
    });
  }

  /** The member's client went away; the last one's leaving cancels the run, after `graceMs`. */
  private leave(member: Member, graceMs: number): void {
    if (!this.members.delete(member)) return;
    member.writer.close(); // its stream's keep-alive stops; nothing more is written to it
    member.resolve();
    if (this.members.size > 0 || this.settled) return;
    const cancel = () => this.members.size === 0 && this.abort.abort('disconnect' satisfies CancelWhy);
    if (graceMs === 0) cancel();
    else this.grace = setTimeout(cancel, graceMs);
  }

  private settle(member: Member): void {
    this.members.delete(member);
    if (this.outcome?.error !== undefined) member.reject(this.outcome.error);
    else member.resolve();
  }

  /** The writer `produce` writes to: each call recorded, then sent to every member. */
  private writer(): SharedWriter {
    const send = (call: (writer: SharedWriter) => void) => {
      this.calls.push(call);
      for (const member of this.members) call(member.writer);
    };
    return {
      delta: (text, task) => send((w) => w.delta(text, task)),
      thinking: (text, task) => send((w) => w.thinking(text, task)),
      toolCall: (call, task) => send((w) => w.toolCall(call, task)),
      finish: (answer, task) => send((w) => w.finish(answer, task)),
      fail: (error, task) => {
        this.failed = true;
        send((w) => w.fail(error, task));
      },
      close: () => send((w) => w.close()),
    };
  }
}
