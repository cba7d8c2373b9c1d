/**
 * The worker's side of a remote attempt's reports: every event, in order, batched into BullMQ job
 * progress (one Redis message carries many events), at most one message in flight per job.
 *
 * The partial-delivery contract (docs/protocol.md §4): a partial whose data is more than progress —
 * a text delta, a tool step, anything — is sent whole and never dropped or merged; only a run of
 * progress-only partials in a row (./wire.ts `isProgressOnly`) is coalesced to its latest
 * (`supersedes`: only when the later sets every field the earlier set).
 *
 * Bounded without dropping: a chatty agent's events wait in one queue while a message is in flight
 * (no queue of Redis commands), and one message carries at most MAX_BATCH_CHARS. A backlog past
 * MAX_BACKLOG_CHARS (Redis unreachable, or slower than the agent for a long time) is an overflow:
 * the owner stops the attempt and fails it — partials are never lost silently.
 */
import { supersedes, type ProgressBatch, type WorkerEvent } from './wire.js';

/** Where the batches go: the BullMQ job (`job.updateProgress`). */
export interface ProgressTarget {
  updateProgress(progress: ProgressBatch): Promise<unknown>;
}

export interface ReporterLimits {
  /** A message goes at most this often while the backlog is small (the panel's refresh rate). */
  intervalMs: number;
  /** One message carries at most this many JSON characters (an event bigger than that goes alone). */
  maxBatchChars: number;
  /** Past this many JSON characters waiting, the reporter overflows (see `onOverflow`). */
  maxBacklogChars: number;
}

export const REPORTER_LIMITS: ReporterLimits = {
  intervalMs: 100,
  maxBatchChars: 1024 * 1024,
  // Two of the largest lines an agent may send (framing.ts: 64 MiB), so one big partial never overflows.
  maxBacklogChars: 128 * 1024 * 1024,
};

/** `next` may replace `prev`, the last event queued: both progress-only partials, `next` setting all `prev` set. */
const replaces = (prev: WorkerEvent | undefined, next: WorkerEvent): boolean =>
  prev?.t === 'partial' && next.t === 'partial' && supersedes(prev.payload, next.payload);

export class Reporter {
  /** Events not yet handed to Redis, oldest first, and the JSON size of each. */
  private queued: WorkerEvent[] = [];
  private sizes: number[] = [];
  private backlog = 0;
  /** Events handed to Redis so far (acknowledged or in flight), and how many are acknowledged. */
  private taken = 0;
  private acknowledged = 0;
  /** Events ever queued (a coalesced one replaces the last and adds none). */
  private pushed = 0;
  private seq = 0;
  private inFlight = false;
  private timer: NodeJS.Timeout | undefined;
  /** flush() callers: resolved once `acknowledged` reaches their mark. */
  private waiters: Array<{ mark: number; resolve: () => void }> = [];
  /** The backlog when it overflowed, in JSON characters. */
  private overflowChars: number | undefined;
  /** Partials refused after an overflow. */
  refused = 0;

  constructor(
    private readonly target: ProgressTarget,
    private readonly onOverflow: (backlogChars: number) => void = () => {},
    private readonly limits: ReporterLimits = REPORTER_LIMITS,
  ) {}

  /** Set once the backlog passed `maxBacklogChars` (to its size): the attempt's partials can no longer all be delivered. */
  get overflowed(): number | undefined {
    return this.overflowChars;
  }

  /** Queues one event; `now` sends at once (a question: the agent waits for its answer). */
  push(event: WorkerEvent, now = false): void {
    if (this.overflowChars !== undefined && event.t === 'partial') {
      this.refused++;
      return;
    }
    const size = JSON.stringify(event).length;
    if (replaces(this.queued.at(-1), event)) {
      this.backlog += size - this.sizes.at(-1)!;
      this.queued[this.queued.length - 1] = event;
      this.sizes[this.sizes.length - 1] = size;
    } else {
      this.queued.push(event);
      this.sizes.push(size);
      this.backlog += size;
      this.pushed++;
    }
    if (this.backlog > this.limits.maxBacklogChars && this.overflowChars === undefined) {
      this.overflowChars = this.backlog;
      this.onOverflow(this.backlog);
    }
    if (now) this.waiters.push({ mark: this.pushed, resolve: () => {} });
    this.schedule();
  }

  /** Sends what is queued; resolves when every event queued so far is in Redis. */
  flush(): Promise<void> {
    if (this.acknowledged >= this.pushed) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push({ mark: this.pushed, resolve });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.queued.length === 0) return;
    // Right away when someone waits, or when a full message is ready; otherwise within the interval.
    const urgent = this.waiters.some((w) => w.mark > this.taken) || this.backlog >= this.limits.maxBatchChars;
    if (urgent) this.send();
    else this.timer ??= setTimeout(() => this.send(), this.limits.intervalMs);
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight || this.queued.length === 0) return;
    let count = 0;
    let chars = 0;
    while (count < this.queued.length && (count === 0 || chars + this.sizes[count]! <= this.limits.maxBatchChars)) {
      chars += this.sizes[count]!;
      count++;
    }
    const events = this.queued.splice(0, count);
    this.sizes.splice(0, count);
    this.backlog -= chars;
    this.taken += count;
    this.inFlight = true;
    // A refused update means the job is gone (removed, or finished elsewhere): nobody waits for it.
    void this.target
      .updateProgress({ seq: this.seq++, events })
      .catch(() => {})
      .then(() => {
        this.inFlight = false;
        this.acknowledged += count;
        this.waiters = this.waiters.filter((w) => (w.mark <= this.acknowledged ? void w.resolve() : true));
        this.schedule();
      });
  }
}
