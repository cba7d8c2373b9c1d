import type { FinalPayload } from '../protocol/index.js';
import type { FailureReason, PartialResult } from '../model/task.js';
import type { BrokerErrorCode } from '../model/errors.js';

const BRAND = Symbol.for('backchannel.TaskError');

/**
 * The one error a task's `result` promise rejects with. `reason` says what happened;
 * `payload` is the agent's own final payload when it sent one (status `error` or `cancelled`).
 * `message` is for people (the broker's starts with the task's label); programs read `taskMessage`
 * (the task's own message, as its snapshot has it) and `detail` (see `TaskSnapshot.detail`).
 */
export class TaskError extends Error {
  override readonly name = 'TaskError';
  readonly [BRAND] = true;
  /** The task's failure message without any prefix. @default message */
  readonly taskMessage: string;
  /** The failure's own words without the framing the reason says, when it has some. */
  readonly detail?: string;
  /** What a task the broker stopped (deadline, watchdog, budget, cancel) had produced: kept with the failure. */
  readonly partialResult?: PartialResult;

  constructor(
    readonly taskId: string,
    readonly reason: FailureReason,
    message: string,
    readonly payload?: FinalPayload,
    readonly stderrTail?: string,
    options?: { cause?: unknown; taskMessage?: string; detail?: string; partialResult?: PartialResult },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.taskMessage = options?.taskMessage ?? message;
    if (options?.detail !== undefined) this.detail = options.detail;
    if (options?.partialResult !== undefined) this.partialResult = options.partialResult;
  }

  /** Works across realms and duplicated module copies, unlike `instanceof`. */
  static is(value: unknown): value is TaskError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** Programming or configuration errors in a call to the broker (bad options, closed broker). */
export class BrokerError extends Error {
  override readonly name = 'BrokerError';
  constructor(
    /** Mapped onto the front-ends' error codes in one table, `BROKER_ERROR_CODES` (src/model/errors.ts). */
    readonly code: BrokerErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
