/**
 * The figures `backchannel stats` prints, through any client (the hub's, or the history on disk the
 * command names): the insights of finished tasks, and each schedule's figures (src/schedules/stats.ts)
 * over all its fire records and the tasks they name, so they are the same whoever reads them.
 */
import type { BackchannelBridge } from '../bridge/contract.js';
import { MAX_FIRE_PAGE_SIZE } from '../model/limits.js';
import type { Insights, InsightsQuery } from '../model/insights.js';
import type { TaskSnapshot } from '../model/task.js';
import type { FireRecord } from '../schedules/schedule.js';
import { scheduleStats, type ScheduleStats } from '../schedules/stats.js';

export { SKIP_REASONS } from '../schedules/schedule.js';
export type { ScheduleStats } from '../schedules/stats.js';

export interface StatsReport {
  insights: Insights;
  /** Each schedule with its figures over the query's range of fire times (none without schedules). */
  schedules: ScheduleStats[];
}

/** The insights for `query` and each schedule's figures, its fires counted by fire time within `since`/`until`. */
export async function readStats(client: BackchannelBridge, query: InsightsQuery): Promise<StatsReport> {
  const insights = await client.insights(query);
  const names = (await client.listSchedules()).map((view) => view.schedule.name);
  if (names.length === 0) return { insights, schedules: [] };
  const fires = await Promise.all(names.map((name) => allFires(client, name)));
  const tasks = new Map<string, TaskSnapshot>((await client.listTasks()).map((task) => [task.id, task]));
  const range = {
    ...(query.since ? { since: Date.parse(query.since) } : {}),
    ...(query.until ? { until: Date.parse(query.until) } : {}),
  };
  return { insights, schedules: names.map((name, i) => scheduleStats(name, fires[i]!, (id) => tasks.get(id), range)) };
}

/** Every fire record a schedule keeps, oldest first, read page by page (each page newest first). */
async function allFires(client: BackchannelBridge, name: string): Promise<FireRecord[]> {
  const pages: FireRecord[][] = [];
  // Bounded: each page moves the cursor back by at least one record, or ends.
  for (let before: number | undefined; ;) {
    const page = await client.getSchedule(
      name,
      before === undefined ? { limit: MAX_FIRE_PAGE_SIZE } : { limit: MAX_FIRE_PAGE_SIZE, before },
    );
    pages.push([...page.fires].reverse());
    if (page.next === undefined || page.fires.length === 0 || (before !== undefined && page.next >= before)) break;
    before = page.next;
  }
  return pages.reverse().flat();
}
