/**
 * What the hub answers about schedules (the bridge's schedule calls, docs/schedules.md), each shape
 * declared once with zod: a schedule as `schedule ls` and the panel list it (`ScheduleView`: its next
 * fire, its newest fire record, its newest run and that run's task state) and one schedule with a
 * page of its fire history, newest first (`ScheduleDetails`). Times are epoch ms, as the fire records
 * keep them. Runs anywhere: no Node imports (the bridge contract takes its types from here).
 */
import * as z from 'zod/mini';
import { TASK_STATES, type TaskState } from '../model/task.js';
import { fireRecordSchema, scheduleSchema } from './schedule.js';

export { FIRE_PAGE_SIZE, MAX_FIRE_PAGE_SIZE } from '../model/limits.js';

const TASK_STATE = z.enum(TASK_STATES as unknown as [TaskState, ...TaskState[]]);
const count = () => z.number().check(z.int(), z.minimum(0));

const VIEW_FIELDS = {
  schedule: scheduleSchema,
  /** The next fire time (epoch ms); absent while paused or when the cron expression never fires again. */
  nextFireAt: z.optional(count()),
  /** Runs of the schedule still active on this hub. */
  activeRuns: count(),
  /** The newest fire record, whatever its outcome. */
  lastFire: z.optional(fireRecordSchema),
  /** The newest fire that ran (`outcome: 'ran'`), and the state of its task (absent once it has left the history). */
  lastRun: z.optional(fireRecordSchema),
  lastRunState: z.optional(TASK_STATE),
};

export const scheduleViewSchema = z.object(VIEW_FIELDS);

export const scheduleDetailsSchema = z.object({
  ...VIEW_FIELDS,
  /** A page of the schedule's fire records, newest first. */
  fires: z.array(fireRecordSchema),
  /** How many fire records the schedule has in all. */
  total: count(),
  /** The cursor of the next (older) page: pass it as `before`; absent on the last page. */
  next: z.optional(count()),
});

export type ScheduleView = z.output<typeof scheduleViewSchema>;
export type ScheduleDetails = z.output<typeof scheduleDetailsSchema>;

/** Which page of a schedule's fire records: the newest `limit` below the cursor `before` (a previous page's `next`). */
export interface FirePageQuery {
  /** @default FIRE_PAGE_SIZE */
  limit?: number;
  before?: number;
}

export type { ScheduleRequest } from './schedule.js';
