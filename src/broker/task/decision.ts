/**
 * What an attempt's outcome means for its task: retry, or settle it (and how). Pure, so that the
 * retry-versus-final rules are tested without processes.
 */
import type { FinalPayload } from '../../protocol/index.js';
import { isRetryable } from '../guards/retry.js';
import type { DeliveryChannel, FailureReason } from '../../model/task.js';
import type { AttemptOutcome } from './attempt.js';
import type { Task } from './task.js';

export type Decision =
  | { kind: 'retry'; why: string }
  | { kind: 'succeed'; payload: FinalPayload; channel: DeliveryChannel }
  | { kind: 'fail'; reason: FailureReason; message: string; detail?: string; payload?: FinalPayload; channel?: DeliveryChannel };

/** `canRetry`: attempts are left and nobody asked to stop. `cancelRequested`: a cancel is under way. */
export function decide(outcome: AttemptOutcome, canRetry: boolean, cancelRequested: boolean): Decision {
  if (outcome.kind === 'final') {
    const { payload, channel } = outcome;
    if (payload.status === 'success') return { kind: 'succeed', payload, channel };
    if (payload.status === 'cancelled')
      return { kind: 'fail', reason: 'cancelled', message: 'was cancelled by the agent', payload, channel };
    const message = errorMessageOf(payload);
    // An agent that holds the task's budget itself (the ACP adapter's paused cap, docs/acp.md) says it stopped there.
    if (isBudgetStop(payload))
      return { kind: 'fail', reason: 'budget_exceeded', message: `over budget: ${message}`, detail: message, payload, channel };
    if (canRetry && isRetryable('error', payload.retryable)) return { kind: 'retry', why: `agent error: ${message}` };
    return { kind: 'fail', reason: 'error', message: `failed: ${message}`, detail: message, payload, channel };
  }
  if (canRetry && outcome.retryable && isRetryable(outcome.reason, undefined)) return { kind: 'retry', why: outcome.message };
  // What a stopped agent answered is its failure's payload: kept, never thrown away.
  const answer = outcome.answer ? { payload: outcome.answer.payload, channel: outcome.answer.channel } : {};
  if (cancelRequested) return { kind: 'fail', reason: 'cancelled', message: outcome.message, ...answer };
  const detail = outcome.detail !== undefined ? { detail: outcome.detail } : {};
  return { kind: 'fail', reason: outcome.reason, message: outcome.message, ...detail, ...answer };
}

/** Applies a settling decision to the task. */
export function settle(task: Task, decision: Exclude<Decision, { kind: 'retry' }>): void {
  if (decision.kind === 'succeed') task.succeed(decision.payload, decision.channel);
  else task.fail(decision.reason, decision.message, decision.payload, decision.channel, decision.detail);
}

/** An error payload whose `data.reason` is `budget_exceeded`: the agent stopped at the task's budget (docs/protocol.md §5). */
function isBudgetStop(payload: FinalPayload): boolean {
  const data = payload.data;
  return typeof data === 'object' && data !== null && (data as { reason?: unknown }).reason === 'budget_exceeded';
}

/** The one-line message of an `error` (or `cancelled`) payload. */
export function errorMessageOf(payload: FinalPayload): string {
  const data = payload.data as { message?: unknown } | string | undefined;
  if (typeof data === 'string') return data.slice(0, 500);
  if (data && typeof data === 'object' && typeof data.message === 'string') return data.message.slice(0, 500);
  return `the agent reported ${payload.status}`;
}
