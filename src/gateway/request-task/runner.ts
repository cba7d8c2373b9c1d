/**
 * Runs one broker task per incoming request, for any front-end (the OpenAI gateway today; an MCP
 * server or other HTTP APIs tomorrow).
 *
 * Guarantees:
 * - the request's `AbortController` is the one way to stop it: aborting with a {@link CancelWhy}
 *   cancels the task with words a person can read in the panel, or drops it from the queue;
 * - a request that takes longer than `timeoutMs` is aborted with `'timeout'` (or the why its
 *   `timeoutWhy` names: a bridged run waiting on its client's tool results says so);
 * - with `maxConcurrent`, at most that many of this front-end's tasks run at once (a shared broker's
 *   own concurrency is not ours to set); the others wait in a queue, none is dropped. A slot is freed
 *   once the task's processes are gone, not when its answer is sent;
 * - with `maxWaiting`, a request that would make more than that many wait for a slot (this
 *   front-end's limiter or the broker's queue) is refused at once with a {@link QueueFullError}
 *   (HTTP front-ends answer 429 with its `retryAfterSeconds`): a burst cannot grow memory without bound;
 * - `shutdown()` aborts every request with `'shutdown'` and resolves when their processes are gone.
 */
import PQueue from 'p-queue';
import type { BackchannelClient, TaskRun } from '../../client/index.js';
import type { TaskSpec, TaskUpdate } from '../../model/task.js';
import { systemClock, type Clock } from '../../model/clock.js';

export type { BackchannelClient, TaskLoad } from '../../client/index.js';

/**
 * Why a request was stopped before its task finished; `idle`: a bridged run's client sent no tool
 * results within the session idle time (../bridged-run.ts); `tool_results`: the request timed out
 * while its bridged run waited on the client's tool results (Y4).
 */
export type CancelWhy = 'timeout' | 'disconnect' | 'shutdown' | 'idle' | 'tool_results';

/** The `success` payload a task resolves with. */
export type TaskResult = Awaited<TaskRun['result']>;

export interface RequestTaskRunnerOptions {
  tasks: BackchannelClient;
  /** Deadline of one request, from `start()` to its result. */
  timeoutMs: number;
  /** Cap on this front-end's running tasks; without it, the broker's own queue decides. */
  maxConcurrent?: number;
  /** Cap on requests waiting for a slot; beyond it `start()` throws a {@link QueueFullError}. */
  maxWaiting?: number;
  /** How many run at once when the broker's queue decides (its concurrency). @default maxConcurrent */
  slots?: number;
  /** Who is shutting down, in the cancel reason the panel shows. @default 'the server' */
  name?: string;
  /** What the deadlines are measured on (a test's fake clock). @default systemClock */
  clock?: Clock;
}

/** Seconds a refused client is told to wait: about one short agent run. */
export const RETRY_AFTER_SECONDS = 5;

/** `start()` refused a request: too many are already waiting. */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(waiting: number) {
    super(`${waiting} requests are already waiting for a sub-agent; try again in ${RETRY_AFTER_SECONDS} s.`);
  }
}

export interface RequestTaskOptions {
  spec: TaskSpec;
  /** Aborted (with a {@link CancelWhy}) when the request must stop; the runner aborts it on timeout. */
  abort: AbortController;
  /** Every update of the task until it settles. */
  onUpdate?(update: TaskUpdate, task: TaskRun): void;
  /** Why the deadline stops the request, asked when it comes. @default 'timeout' */
  timeoutWhy?(): CancelWhy;
}

export interface RequestTask {
  /** The broker task, once submitted (undefined while it waits for a slot). */
  readonly task: TaskRun | undefined;
  /** Why the request was aborted, if it was. */
  readonly why: CancelWhy | undefined;
  /**
   * The task's `success` payload; rejects with its TaskError, or the abort reason while queued (not
   * reported as an unhandled rejection before the caller awaits it).
   */
  readonly result: Promise<TaskResult>;
}

export interface RequestTaskRunner {
  start(options: RequestTaskOptions): RequestTask;
  /** Requests not finished yet (answer sent or not, processes not gone yet). */
  readonly inFlight: number;
  /** Aborts every request with `'shutdown'` and resolves when their processes are gone. */
  shutdown(): Promise<void>;
}

interface Entry {
  abort: AbortController;
  finished: Promise<unknown>;
  task?: TaskRun;
}

/** Not running yet: waiting in this front-end's limiter or in the broker's queue. */
function isWaiting(entry: Entry): boolean {
  return entry.task === undefined || entry.task.snapshot().state === 'queued';
}

/** The reason the panel shows for a request stopped for `why`. */
function cancelReasons(options: RequestTaskRunnerOptions): Record<CancelWhy, string> {
  const name = options.name ?? 'server';
  return {
    timeout: `the ${name} request timed out after ${options.timeoutMs} ms`,
    disconnect: 'the client disconnected',
    shutdown: `the ${name} is shutting down`,
    idle: 'the client sent no tool results in time',
    tool_results: `the client sent no tool results within the ${name} request timeout (${options.timeoutMs} ms)`,
  };
}

/** With `maxWaiting`: refuses a request that would make more than that many wait for a slot. */
function refuseWhenFull(options: RequestTaskRunnerOptions, inFlight: ReadonlySet<Entry>): void {
  if (options.maxWaiting === undefined) return;
  const waiting = [...inFlight].filter(isWaiting).length;
  const slots = options.maxConcurrent ?? options.slots ?? Number.POSITIVE_INFINITY;
  if (inFlight.size - waiting >= slots && waiting >= options.maxWaiting) throw new QueueFullError(waiting);
}

/** Submits now (the broker's queue), or through this front-end's limiter: the slot is free once the task's processes are gone. */
function submitThrough(tasks: BackchannelClient, limiter: PQueue | undefined, spec: TaskSpec, signal: AbortSignal): Promise<TaskRun> {
  if (!limiter) return Promise.resolve(tasks.run(spec));
  return new Promise<TaskRun>((resolve, reject) => {
    limiter
      .add(
        async () => {
          const task = await tasks.run(spec);
          resolve(task);
          await task.finished;
        },
        { signal },
      )
      .catch(reject);
  });
}

export function createRequestTaskRunner(options: RequestTaskRunnerOptions): RequestTaskRunner {
  const { tasks, timeoutMs } = options;
  const limiter = options.maxConcurrent !== undefined ? new PQueue({ concurrency: options.maxConcurrent }) : undefined;
  const inFlight = new Set<Entry>();
  const reasons = cancelReasons(options);

  function start({ spec, abort, onUpdate, timeoutWhy }: RequestTaskOptions): RequestTask {
    refuseWhenFull(options, inFlight);
    const { signal } = abort;
    const why = () => signal.reason as CancelWhy | undefined;
    const clearTimer = (options.clock ?? systemClock).after(timeoutMs, () => abort.abort(timeoutWhy?.() ?? 'timeout'), true);
    let task: TaskRun | undefined;
    // No `signal` in the spec: cancelling by hand gives the panel a reason a person can read.
    signal.addEventListener('abort', () => task?.cancel(reasons[why()!]), { once: true });
    const entry: Entry = { abort, finished: Promise.resolve() };
    inFlight.add(entry);

    const result = (async () => {
      let unsubscribe: (() => void) | undefined;
      try {
        task = await submitThrough(tasks, limiter, spec, signal);
        entry.task = task;
        entry.finished = task.finished;
        if (signal.aborted) task.cancel(reasons[why()!]);
        const submitted = task;
        // Finished tasks stay in the broker's history: the listener (and the request) must not.
        if (onUpdate) unsubscribe = task.on('update', (update) => onUpdate(update, submitted));
        return await task.result;
      } finally {
        clearTimer();
        unsubscribe?.();
        void entry.finished.finally(() => inFlight.delete(entry));
      }
    })();
    // Awaited by the caller, maybe only after a shutdown: never an unhandled rejection meanwhile.
    result.catch(() => {});

    return {
      get task() {
        return task;
      },
      get why() {
        return signal.aborted ? why() : undefined;
      },
      result,
    };
  }

  return {
    start,
    get inFlight() {
      return inFlight.size;
    },
    async shutdown() {
      for (const entry of inFlight) entry.abort.abort('shutdown' satisfies CancelWhy);
      limiter?.clear();
      await Promise.all([...inFlight].map((entry) => entry.finished.catch(() => {})));
    },
  };
}
