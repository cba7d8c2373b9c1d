/**
 * What a schedule does at a given moment, with an injected clock: the on-time fire, catch-up after
 * the hub was down (latest, all, none, the window), pause, the budget, every overlap policy, skips
 * collapsed into ranges, bounded work, and fires across a DST change in America/New_York.
 */
import { describe, expect, test } from 'vitest';
import { MAX_DUE_PER_PLAN, planFires, type PlanInput } from '../../src/schedules/plan.js';
import { parseSchedule, type Schedule } from '../../src/schedules/schedule.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const S = 1000;
const MIN = 60 * S;

function schedule(fields: Partial<Schedule> = {}): Schedule {
  const parsed = parseSchedule({ name: 'job', command: ['true'], createdAt: T0, everyMs: MIN, ...fields });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.schedule;
}

function plan(fields: Partial<Schedule>, input: Partial<PlanInput> & { now: number }) {
  return planFires({ schedule: schedule(fields), lastFireAt: undefined, upSince: T0, running: 0, ...input });
}

test('nothing is due before the first fire time', () => {
  expect(plan({}, { now: T0 + 59 * S })).toEqual({ decisions: [], through: undefined });
});

test('an on-time fire runs and is not a catch-up', () => {
  expect(plan({}, { now: T0 + MIN + 200 })).toEqual({
    decisions: [{ action: 'run', at: T0 + MIN, catchUp: false, cancelRunning: false }],
    through: T0 + MIN,
  });
});

test('a fire already recorded is not planned again', () => {
  expect(plan({}, { now: T0 + MIN + 200, lastFireAt: T0 + MIN }).decisions).toEqual([]);
});

describe('catch-up after the hub was down', () => {
  // The hub was down from before T0+1m until T0+5m30s; it is now T0+5m31s.
  const down = { upSince: T0 + 5 * MIN + 30 * S, now: T0 + 5 * MIN + 31 * S };

  test('latest (the default) runs one catch-up for the latest miss and records the others as hub_down', () => {
    expect(plan({}, down)).toEqual({
      decisions: [
        { action: 'skip', at: T0 + MIN, reason: 'hub_down', until: T0 + 4 * MIN, count: 4 },
        { action: 'run', at: T0 + 5 * MIN, catchUp: true, cancelRunning: false },
      ],
      through: T0 + 5 * MIN,
    });
  });

  test('none runs no miss', () => {
    expect(plan({ catchUp: 'none' }, down).decisions).toEqual([
      { action: 'skip', at: T0 + MIN, reason: 'hub_down', until: T0 + 5 * MIN, count: 5 },
    ]);
  });

  test('all runs every miss in order; under the default overlap skip only the first, the rest skipped overlap', () => {
    expect(plan({ catchUp: 'all' }, down).decisions).toEqual([
      { action: 'run', at: T0 + MIN, catchUp: true, cancelRunning: false },
      { action: 'skip', at: T0 + 2 * MIN, reason: 'overlap', until: T0 + 5 * MIN, count: 4 },
    ]);
    expect(plan({ catchUp: 'all', overlap: 'allow' }, down).decisions.filter((d) => d.action === 'run')).toHaveLength(5);
  });

  test('misses older than the window are skipped as one range, and the latest in it still runs', () => {
    const sched = schedule({ catchUpWindowMs: 86_400_000 });
    const now = T0 + 10 * 86_400_000 + 30 * S;
    let lastFireAt: number | undefined;
    const decisions = [];
    for (let calls = 0; calls < 20; calls++) {
      const result = planFires({ schedule: sched, lastFireAt, now, upSince: now - S, running: 0 });
      if (result.through === undefined) break;
      decisions.push(...result.decisions);
      lastFireAt = result.through;
    }
    // the misses before the window are one range, merged with the first backlog chunk of the window
    expect(decisions[0]).toMatchObject({ action: 'skip', at: T0 + MIN, reason: 'hub_down' });
    expect((decisions[0] as { count: number }).count).toBeGreaterThanOrEqual(9 * 1440);
    expect(decisions.filter((d) => d.action === 'run')).toEqual([
      { action: 'run', at: T0 + 10 * 86_400_000, catchUp: true, cancelRunning: false },
    ]);
    const skipped = decisions.reduce((n, d) => n + (d.action === 'skip' ? (d.count ?? 1) : 0), 0);
    expect(skipped).toBe(10 * 1440 - 1);
  });

  test('a miss older than the whole window does not run under latest', () => {
    const now = T0 + 3 * 86_400_000 + MIN;
    const decisions = plan({ everyMs: 86_400_000 * 2, catchUpWindowMs: 86_400_000 }, { now, upSince: now }).decisions;
    expect(decisions).toEqual([{ action: 'skip', at: T0 + 2 * 86_400_000, reason: 'hub_down' }]);
  });

  test('an on-time fire supersedes the catch-up under latest', () => {
    const decisions = plan({}, { upSince: T0 + 2 * MIN + 30 * S, now: T0 + 3 * MIN + S }).decisions;
    expect(decisions).toEqual([
      { action: 'skip', at: T0 + MIN, reason: 'hub_down', until: T0 + 2 * MIN, count: 2 },
      { action: 'run', at: T0 + 3 * MIN, catchUp: false, cancelRunning: false },
    ]);
  });

  test('work per call is bounded; a backlog beyond it is planned on the next calls and ends with one run', () => {
    const sched = schedule({ everyMs: S });
    const now = T0 + 3 * 3_600_000; // 10 800 fires due, all inside the 7-day window
    let lastFireAt: number | undefined;
    let runs = 0;
    let calls = 0;
    for (; calls < 100; calls++) {
      const { decisions, through } = planFires({ schedule: sched, lastFireAt, now, upSince: now, running: 0 });
      if (through === undefined) break;
      runs += decisions.filter((d) => d.action === 'run').length;
      lastFireAt = through;
    }
    expect(calls).toBe(Math.ceil(10_800 / MAX_DUE_PER_PLAN));
    expect(runs).toBe(1);
    expect(lastFireAt).toBe(now);
  });
});

describe('pause and budget', () => {
  test('a paused schedule records its due fires as paused and runs none, even after a downtime', () => {
    expect(plan({ paused: true }, { now: T0 + 3 * MIN, upSince: T0 + 2 * MIN }).decisions).toEqual([
      { action: 'skip', at: T0 + MIN, reason: 'paused', until: T0 + 3 * MIN, count: 3 },
    ]);
  });

  test('a run the budget forbids is skipped budget_spent', () => {
    expect(plan({}, { now: T0 + MIN, budgetSpent: true }).decisions).toEqual([{ action: 'skip', at: T0 + MIN, reason: 'budget_spent' }]);
  });
});

describe('overlap with a run still active', () => {
  const busy = { now: T0 + MIN, running: 1 };
  test.each([
    ['skip', { action: 'skip', at: T0 + MIN, reason: 'overlap' }],
    ['buffer-one', { action: 'buffer', at: T0 + MIN, catchUp: false }],
    ['cancel-other', { action: 'run', at: T0 + MIN, catchUp: false, cancelRunning: true }],
    ['allow', { action: 'run', at: T0 + MIN, catchUp: false, cancelRunning: false }],
  ] as const)('%s', (overlap, decision) => {
    expect(plan({ overlap }, busy).decisions).toEqual([decision]);
  });

  test('buffer-one keeps one: with a fire already buffered the next is skipped overlap', () => {
    expect(plan({ overlap: 'buffer-one' }, { ...busy, buffered: true }).decisions).toEqual([
      { action: 'skip', at: T0 + MIN, reason: 'overlap' },
    ]);
  });
});

describe('cron across DST with an injected clock (America/New_York)', () => {
  const nightly = { everyMs: undefined, cron: '30 2 * * *', tz: 'America/New_York', createdAt: Date.parse('2026-03-07T12:00:00Z') };

  test('on spring-forward night the 02:30 job is due once, at 03:30 EDT, and not before', () => {
    const upSince = nightly.createdAt;
    expect(plan(nightly, { now: Date.parse('2026-03-08T07:29:59Z'), upSince }).decisions).toEqual([]);
    const due = plan(nightly, { now: Date.parse('2026-03-08T07:30:01Z'), upSince });
    expect(due.decisions).toEqual([{ action: 'run', at: Date.parse('2026-03-08T07:30:00Z'), catchUp: false, cancelRunning: false }]);
    expect(plan(nightly, { now: Date.parse('2026-03-08T12:00:00Z'), upSince, lastFireAt: due.through }).decisions).toEqual([]);
  });

  test('on fall-back night a 01:30 job runs once although 01:30 happens twice', () => {
    const fields = { ...nightly, cron: '30 1 * * *', createdAt: Date.parse('2026-10-31T12:00:00Z') };
    const upSince = fields.createdAt;
    const first = plan(fields, { now: Date.parse('2026-11-01T05:30:01Z'), upSince });
    expect(first.decisions).toHaveLength(1);
    // the second 01:30 (EST, 06:30Z) is not a fire time
    expect(plan(fields, { now: Date.parse('2026-11-01T06:30:01Z'), upSince, lastFireAt: first.through }).decisions).toEqual([]);
  });

  test('a 6-field cron every 20 s crossing the DST change runs each fire once', () => {
    const fields = { ...nightly, cron: '*/20 * * * * *', createdAt: Date.parse('2026-03-08T06:59:00Z') };
    let lastFireAt: number | undefined;
    const ran: string[] = [];
    for (let now = fields.createdAt; now <= Date.parse('2026-03-08T07:01:00Z'); now += 10 * S) {
      const result = plan(fields, { now, upSince: fields.createdAt, lastFireAt });
      for (const d of result.decisions) if (d.action === 'run') ran.push(new Date(d.at).toISOString().slice(11, 19));
      lastFireAt = result.through ?? lastFireAt;
    }
    expect(ran).toEqual(['06:59:20', '06:59:40', '07:00:00', '07:00:20', '07:00:40', '07:01:00']);
  });
});
