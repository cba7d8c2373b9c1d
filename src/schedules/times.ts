/**
 * When a schedule fires. Cron expressions are read by `cron-parser` (pinned 4.9.0, the version
 * BullMQ already depends on, so the fleet's job schedulers and ours read cron the same way and
 * nothing new is installed; it takes 5 fields or 6 with seconds first, and an IANA zone). It is
 * DST-correct the way Vixie cron is for the cases that matter: across spring-forward a daily
 * time inside the missing hour fires once (an hour later, 02:30 → 03:30), across fall-back a
 * daily time in the repeated hour fires once (the first 01:30), and an hourly schedule fires
 * every real hour. `--every` intervals are anchored at the schedule's creation, in plain UTC ms,
 * so they know no DST at all. Every loop is bounded by `limit`.
 */
import cronParser from 'cron-parser';
import type { Schedule } from './schedule.js';

/** The check of a cron expression and zone: undefined when valid, else a one-line error. */
export function cronError(cron: string, tz?: string): string | undefined {
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `--cron "${cron}" has ${fields} fields; give 5 (minute first) or 6 (seconds first)`;
  if (tz !== undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
    } catch {
      return `--tz ${tz} is not an IANA time zone (e.g. Europe/Berlin, America/New_York)`;
    }
  }
  try {
    cronParser.parseExpression(cron, { tz, currentDate: new Date(0) }).next();
    return undefined;
  } catch (error) {
    return `--cron "${cron}" is not a cron expression: ${(error as Error).message}`;
  }
}

/** The fire times after `after` and at or before `until` (epoch ms), in order, at most `limit`. */
export function fireTimes(schedule: Schedule, after: number, until: number, limit: number): number[] {
  const out: number[] = [];
  if (until <= after || limit <= 0) return out;
  if (schedule.everyMs !== undefined) {
    const every = schedule.everyMs;
    let k = Math.max(1, Math.floor((after - schedule.createdAt) / every) + 1);
    for (let t = schedule.createdAt + k * every; t <= until && out.length < limit; t = schedule.createdAt + ++k * every)
      if (t > after) out.push(t);
    return out;
  }
  const iterator = cronParser.parseExpression(schedule.cron!, {
    currentDate: new Date(after),
    endDate: new Date(until + 1),
    tz: schedule.tz,
  });
  while (out.length < limit && iterator.hasNext()) {
    const t = iterator.next().getTime();
    if (t > until) break;
    if (t > after) out.push(t);
  }
  return out;
}

/** The next fire time after `after`, or undefined (a cron expression that never fires again). */
export function nextFireTime(schedule: Schedule, after: number): number | undefined {
  if (schedule.everyMs !== undefined) return fireTimes(schedule, after, after + schedule.everyMs, 1)[0];
  try {
    const iterator = cronParser.parseExpression(schedule.cron!, { currentDate: new Date(after), tz: schedule.tz });
    return iterator.next().getTime();
  } catch {
    return undefined;
  }
}

/** The last fire time strictly before `before`, at or after the schedule's creation; undefined when none. */
export function lastFireBefore(schedule: Schedule, before: number): number | undefined {
  let t: number | undefined;
  if (schedule.everyMs !== undefined) {
    const k = Math.floor((before - 1 - schedule.createdAt) / schedule.everyMs);
    t = k >= 1 ? schedule.createdAt + k * schedule.everyMs : undefined;
  } else {
    try {
      t = cronParser
        .parseExpression(schedule.cron!, { currentDate: new Date(before), tz: schedule.tz })
        .prev()
        .getTime();
    } catch {
      t = undefined;
    }
  }
  return t !== undefined && t > schedule.createdAt ? t : undefined;
}

/** How many fire times lie in [from, to] when that is cheap to know (`--every`); undefined for cron. */
export function countFires(schedule: Schedule, from: number, to: number): number | undefined {
  return schedule.everyMs === undefined ? undefined : Math.floor((to - from) / schedule.everyMs) + 1;
}
