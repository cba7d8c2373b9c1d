/**
 * The queue seam: where an attempt runs. The broker keeps its own queue (p-queue: concurrency,
 * pause, retries with backoff) and asks an `AttemptQueue` to run each attempt. The default runs it
 * here, as an `Attempt`; src/fleet's Redis queue hands it to a BullMQ worker on another machine,
 * which runs the very same `Attempt` there and reports back through the sink.
 */
import { Attempt, type AttemptOutcome, type AttemptSettings, type AttemptSink, type StopReason } from '../task/attempt.js';
import type { WorkerInfo } from '../../model/fleet.js';
import type { DeliveryChannel } from '../../model/task.js';
import type { FinalPayload } from '../../protocol/index.js';

/** What the broker needs from a running attempt (`Attempt` is one). */
export interface RunningAttempt {
  /** Settles once: the first final payload, or why the attempt failed. */
  readonly outcome: Promise<AttemptOutcome>;
  /** Settles when the attempt's processes and endpoint are gone. */
  readonly finished: Promise<void>;
  readonly exitCode: number | null | undefined;
  readonly exitSignal: NodeJS.Signals | null | undefined;
  /**
   * After a stop: the final payload the agent sent as it stopped (its answer to `cancel`), once it
   * came; complete when `finished` settles (a fleet attempt's comes with its worker's report).
   */
  readonly answer?: { payload: FinalPayload; channel: DeliveryChannel } | undefined;
  /** Never throws: every failure becomes the outcome. */
  start(): Promise<void>;
  /** Sends the ack of the agent's final payload, held until its ending is durable (a local attempt's). */
  acknowledge?(): void;
  /** Decides the outcome now; the process tree is stopped in the background. */
  stop(reason: StopReason, message: string): void;
}

export interface AttemptQueue {
  /** `local`, or where the attempts go (e.g. `redis`). */
  readonly kind: string;
  /** Attempts the broker keeps in flight when its `concurrency` option is not set. @default the broker's DEFAULTS */
  readonly concurrency?: number;
  attempt(settings: AttemptSettings, sink: AttemptSink): RunningAttempt;
  /** The workers serving this queue. */
  fleet(): Promise<WorkerInfo[]>;
  /** Called by `TaskBroker.close()` after every task has finished. */
  close(): Promise<void>;
}

/** Today's behaviour: every attempt is a local process. */
export const LOCAL_QUEUE: AttemptQueue = {
  kind: 'local',
  attempt: (settings, sink) => new Attempt(settings, sink),
  fleet: () => Promise.resolve([]),
  close: () => Promise.resolve(),
};
