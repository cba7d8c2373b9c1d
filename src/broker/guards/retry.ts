import { BrokerError } from '../errors.js';
import { checkDuration } from './duration.js';
import { MAX_DURATION_MS } from '../../model/duration.js';
import type { FailureReason, RetryPolicy } from '../../model/task.js';

export const DEFAULT_RETRY: RetryPolicy = { max: 0, backoffMs: 1000, factor: 2 };

export function normalizeRetry(value: Partial<RetryPolicy> | number | undefined): RetryPolicy {
  const policy: RetryPolicy = typeof value === 'number' ? { ...DEFAULT_RETRY, max: value } : { ...DEFAULT_RETRY, ...value };
  for (const key of ['max', 'backoffMs', 'factor'] as const) {
    const n = policy[key];
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) {
      throw new BrokerError('invalid_option', `Expected \`retries.${key}\` to be a non-negative finite number, got \`${String(n)}\``);
    }
  }
  checkDuration('retries.backoffMs', policy.backoffMs);
  checkDuration('retries.maxBackoffMs', policy.maxBackoffMs);
  policy.max = Math.floor(policy.max);
  return policy;
}

/** Delay before retry number `retry` (1 = first retry): backoff × factor^(retry−1), capped. */
export function backoffDelay(policy: RetryPolicy, retry: number): number {
  const cap = policy.maxBackoffMs ?? policy.backoffMs * 100;
  return Math.min(cap, MAX_DURATION_MS, policy.backoffMs * policy.factor ** (retry - 1));
}

/** Failures worth another attempt: the agent may do better next time. Cancel, protocol bugs and a spent budget are final. */
export function isRetryable(reason: FailureReason, agentSaysRetryable: boolean | undefined): boolean {
  if (reason === 'cancelled' || reason === 'protocol' || reason === 'refused' || reason === 'budget_exceeded') return false;
  if (reason === 'error') return agentSaysRetryable !== false;
  return true;
}
