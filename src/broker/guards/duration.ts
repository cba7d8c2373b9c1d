/**
 * Durations given in milliseconds (timeouts, grace periods, backoff). Node's timers hold at most
 * 2^31 − 1 ms (about 24.8 days); a larger value overflows and fires after 1 ms, so a "3-year timeout"
 * would fail a task at once. Every duration is checked against that limit (model/duration.ts) where it enters.
 */
import { durationTooLong, MAX_DURATION_MS } from '../../model/duration.js';
import { BrokerError } from '../errors.js';

/** Throws a BrokerError naming `name` unless `value` is undefined or a finite number in 0…MAX_DURATION_MS. */
export function checkDuration(name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new BrokerError('invalid_option', `Expected \`${name}\` to be a non-negative finite number, got \`${String(value)}\``);
  }
  if (value > MAX_DURATION_MS) throw new BrokerError('invalid_option', durationTooLong(name, value));
}
