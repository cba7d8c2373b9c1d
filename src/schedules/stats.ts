/**
 * The figures of one schedule for `backchannel stats` (docs/schedules.md): from its fire records and
 * the history's tasks, how many fires ran (and how their tasks ended), how many were skipped and why,
 * and the tokens and cost its runs reported. Declared once with zod; pure (the records, the task
 * lookup and the range are passed in), so the figures are the same whoever reads them.
 *
 * A fire counts by its fire time (`at`). A skip record that stands for a run of misses counts by its
 * `count`; a range whose size is not known cheaply (a cron schedule down for weeks) counts once.
 * A `buffered` record is not a fire of its own: the `ran` record of the same time follows it. An
 * `elsewhere` record is a fire another hub of the fleet decided: that hub's figures count it.
 */
import { z } from 'zod';
import type { TaskSnapshot, TaskState } from '../model/task.js';
import { tokensOf, usageInRange } from '../model/usage.js';
import { SKIP_REASONS, type FireRecord, type SkipReason } from './schedule.js';

const COUNT = z.number().int().nonnegative();

export const scheduleStatsSchema = z.object({
  schedule: z.string(),
  /** Fire times recorded in the range: `runs` plus every skipped one. */
  fires: COUNT,
  /** Fires that started a task (on time, caught up, or `run-now`). */
  runs: COUNT,
  /** How those tasks ended: `failed` includes `interrupted`; `active` are still queued or running; `unknown` left the history. */
  succeeded: COUNT,
  failed: COUNT,
  cancelled: COUNT,
  active: COUNT,
  unknown: COUNT,
  /** Skipped fires by reason (every reason, 0 when none). */
  skipped: z.object(Object.fromEntries(SKIP_REASONS.map((reason) => [reason, COUNT])) as Record<SkipReason, typeof COUNT>),
  /** Input + output tokens and US dollars the runs' agents reported, summed. */
  tokens: COUNT,
  costUsd: z.number().nonnegative(),
});

export type ScheduleStats = z.infer<typeof scheduleStatsSchema>;

/** Fire times to count, epoch ms: at or after `since`, before `until`. */
export interface StatsRange {
  since?: number;
  until?: number;
}

const OUTCOME_OF: Record<TaskState, 'succeeded' | 'failed' | 'cancelled' | 'active'> = {
  succeeded: 'succeeded',
  failed: 'failed',
  interrupted: 'failed',
  cancelled: 'cancelled',
  queued: 'active',
  running: 'active',
  retrying: 'active',
};

export function scheduleStats(
  schedule: string,
  fires: readonly FireRecord[],
  taskOf: (id: string) => Pick<TaskSnapshot, 'state' | 'usage'> | undefined,
  range: StatsRange = {},
): ScheduleStats {
  const stats: ScheduleStats = {
    schedule,
    fires: 0,
    runs: 0,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
    active: 0,
    unknown: 0,
    skipped: Object.fromEntries(SKIP_REASONS.map((reason) => [reason, 0])) as Record<SkipReason, number>,
    tokens: 0,
    costUsd: 0,
  };
  const inRange = (at: number) => (range.since === undefined || at >= range.since) && (range.until === undefined || at < range.until);
  for (const fire of fires) {
    if (fire.schedule !== schedule || !inRange(fire.at) || fire.outcome === 'buffered' || fire.outcome === 'elsewhere') continue;
    if (fire.outcome === 'skipped') {
      const count = fire.count ?? 1;
      stats.fires += count;
      if (fire.reason) stats.skipped[fire.reason] += count;
      continue;
    }
    stats.fires += 1;
    stats.runs += 1;
    const task = fire.taskId === undefined ? undefined : taskOf(fire.taskId);
    if (!task) {
      stats.unknown += 1;
      continue;
    }
    stats[OUTCOME_OF[task.state]] += 1;
    if (task.usage && usageInRange(task.usage)) {
      stats.tokens += tokensOf(task.usage);
      stats.costUsd += task.usage.costUsd ?? 0;
    }
  }
  return stats;
}
