/**
 * What a schedule does now: given the schedule, the last fire time already recorded, the clock
 * (injected), when this scheduler came up, and what of the schedule is still running, `planFires`
 * says for every fire time that fell due whether it runs, waits in the one buffer, or is skipped and
 * why. It is pure (no clock, no I/O), so every policy is tested with an injected clock.
 *
 * - A fire time at or after `upSince` is on time (the scheduler was up at it). One before it was
 *   missed because the hub was down, and the catch-up policy decides: `latest` runs the latest miss
 *   within the window (none if an on-time fire supersedes it), `all` runs every miss within the
 *   window, `none` runs no miss. Every other miss is skipped `hub_down`.
 * - A paused schedule skips every due fire (`paused`); resuming does not replay them.
 * - Fires that would run go through the overlap policy in order: `skip` skips while a run of the
 *   schedule is active, `buffer-one` keeps one to start when it ends (more are skipped), `cancel-other`
 *   cancels the active run and runs, `allow` runs beside it.
 * - A run the budget forbids is skipped `budget_spent`.
 * - Skips in a row with one reason collapse into one decision (`at`…`until`, `count` when it is known
 *   cheaply), so a hub down for a month on `--every 1s` is one record, not 2.6 million. Work per call is
 *   bounded by MAX_DUE_PER_PLAN; the rest is planned on the next call (`through` says how far this one
 *   got), and while a backlog remains every fire of it counts as missed.
 */
import type { Schedule, SkipReason } from './schedule.js';
import { countFires, fireTimes, lastFireBefore } from './times.js';

/**
 * Fire times planned one by one per call. cron-parser with a zone takes up to ~15 ms per step on a busy
 * machine, so 500 bounds a tick to a few seconds; a longer backlog is worked off over the next ticks,
 * and misses older than the catch-up window are one range, never enumerated.
 */
export const MAX_DUE_PER_PLAN = 500;

export interface PlanInput {
  readonly schedule: Schedule;
  /** The last fire time recorded for the schedule (ran or skipped); none yet: its creation. */
  readonly lastFireAt: number | undefined;
  readonly now: number;
  /** When this scheduler started: fire times before it were missed while the hub was down. */
  readonly upSince: number;
  /** Runs of this schedule still active. */
  readonly running: number;
  /** A fire already waits in the buffer (`buffer-one`). */
  readonly buffered?: boolean;
  /** The budget allows no run now. */
  readonly budgetSpent?: boolean;
}

export type FireDecision =
  | { readonly action: 'run'; readonly at: number; readonly catchUp: boolean; readonly cancelRunning: boolean }
  | { readonly action: 'buffer'; readonly at: number; readonly catchUp: boolean }
  | {
      readonly action: 'skip';
      readonly at: number;
      readonly reason: SkipReason;
      readonly until?: number;
      readonly count?: number;
    };

export interface Plan {
  readonly decisions: readonly FireDecision[];
  /** The last fire time this plan covers (record it as the schedule's last fire); undefined: nothing was due. */
  readonly through: number | undefined;
}

interface Candidate {
  readonly at: number;
  readonly catchUp: boolean;
}

export function planFires(input: PlanInput): Plan {
  const { schedule, now, upSince } = input;
  const raw: FireDecision[] = [];
  const skip = (at: number, reason: SkipReason) => raw.push({ action: 'skip', at, reason });
  let after = input.lastFireAt ?? schedule.createdAt;
  const windowStart = now - schedule.catchUpWindowMs;
  // Misses older than the catch-up window never run: one range, found without walking through it.
  const beforeWindow = Math.min(windowStart, upSince);
  const first = after < beforeWindow ? fireTimes(schedule, after, beforeWindow - 1, 1)[0] : undefined;
  if (first !== undefined) {
    const last = lastFireBefore(schedule, beforeWindow) ?? first;
    const count = countFires(schedule, first, last);
    const reason: SkipReason = schedule.paused ? 'paused' : 'hub_down';
    raw.push({ action: 'skip', at: first, reason, ...(last > first ? { until: last } : {}), ...(count && count > 1 ? { count } : {}) });
    after = last;
  }
  const due = fireTimes(schedule, after, now, MAX_DUE_PER_PLAN);
  const through = due[due.length - 1] ?? (first !== undefined ? after : undefined);
  if (due.length === 0) return { decisions: collapse(raw), through };

  if (schedule.paused) {
    for (const at of due) skip(at, 'paused');
    return { decisions: collapse(raw), through };
  }
  const backlogRemains = due.length === MAX_DUE_PER_PLAN;
  const onTime = due.filter((at) => at >= upSince && !backlogRemains);
  const missed = due.filter((at) => at < upSince || backlogRemains);
  const inWindow = missed.filter((at) => at >= windowStart);
  let caughtUp: number[] = [];
  if (schedule.catchUp === 'all') caughtUp = inWindow;
  if (!backlogRemains && schedule.catchUp === 'latest' && onTime.length === 0 && inWindow.length > 0)
    caughtUp = [inWindow[inWindow.length - 1]!];
  const runs = new Set(caughtUp);
  for (const at of missed) if (!runs.has(at)) skip(at, 'hub_down');

  const candidates: Candidate[] = [...caughtUp.map((at) => ({ at, catchUp: true })), ...onTime.map((at) => ({ at, catchUp: false }))];
  let active = input.running;
  let buffered = input.buffered ?? false;
  for (const { at, catchUp } of candidates) {
    if (input.budgetSpent) {
      skip(at, 'budget_spent');
      continue;
    }
    if (active === 0 || schedule.overlap === 'allow') {
      raw.push({ action: 'run', at, catchUp, cancelRunning: false });
      active += 1;
    } else if (schedule.overlap === 'cancel-other') {
      raw.push({ action: 'run', at, catchUp, cancelRunning: true });
      active = 1;
    } else if (schedule.overlap === 'buffer-one' && !buffered) {
      raw.push({ action: 'buffer', at, catchUp });
      buffered = true;
    } else skip(at, 'overlap');
  }
  raw.sort((a, b) => a.at - b.at);
  return { decisions: collapse(raw), through };
}

/** Skips in a row with one reason become one decision covering them all (its count only when every part's is known). */
function collapse(decisions: readonly FireDecision[]): FireDecision[] {
  const out: FireDecision[] = [];
  const countOf = (d: FireDecision & { action: 'skip' }) => d.count ?? (d.until === undefined ? 1 : undefined);
  for (const decision of decisions) {
    const last = out[out.length - 1];
    if (decision.action === 'skip' && last?.action === 'skip' && last.reason === decision.reason) {
      const a = countOf(last);
      const b = countOf(decision);
      const { count: _count, ...rest } = last;
      const count = a !== undefined && b !== undefined ? a + b : undefined;
      out[out.length - 1] = { ...rest, until: decision.until ?? decision.at, ...(count !== undefined ? { count } : {}) };
    } else out.push(decision);
  }
  return out;
}
