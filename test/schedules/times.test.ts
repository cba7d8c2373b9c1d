/**
 * When a schedule fires: cron read by cron-parser in a zone, across both DST changes of 2026 in
 * America/New_York, 6-field cron with seconds, `--every` anchored at creation, and the checks.
 */
import { describe, expect, test } from 'vitest';
import { parseSchedule, type Schedule } from '../../src/schedules/schedule.js';
import { cronError, fireTimes, nextFireTime } from '../../src/schedules/times.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());

function schedule(fields: Partial<Schedule>): Schedule {
  const parsed = parseSchedule({ name: 'nightly', command: ['true'], createdAt: at('2026-01-01T00:00:00Z'), ...fields });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.schedule;
}

describe('cron across DST in America/New_York', () => {
  const tz = 'America/New_York';

  test('a daily 09:00 stays 09:00 local across spring-forward (2026-03-08), so its UTC time moves an hour', () => {
    const s = schedule({ cron: '0 9 * * *', tz });
    expect(iso(fireTimes(s, at('2026-03-06T12:00:00Z'), at('2026-03-10T00:00:00Z'), 10))).toEqual([
      '2026-03-06T14:00:00.000Z',
      '2026-03-07T14:00:00.000Z',
      '2026-03-08T13:00:00.000Z',
      '2026-03-09T13:00:00.000Z',
    ]);
  });

  test('a daily 02:30, inside the hour spring-forward removes, still fires exactly once that day', () => {
    const s = schedule({ cron: '30 2 * * *', tz });
    const times = fireTimes(s, at('2026-03-08T05:00:00Z'), at('2026-03-09T05:00:00Z'), 10);
    expect(times).toHaveLength(1);
    expect(iso(times)).toEqual(['2026-03-08T07:30:00.000Z']); // 03:30 EDT: the missing 02:30 runs an hour late
  });

  test('a daily 01:30, inside the hour fall-back repeats (2026-11-01), fires once, not twice', () => {
    const s = schedule({ cron: '30 1 * * *', tz });
    expect(iso(fireTimes(s, at('2026-10-31T12:00:00Z'), at('2026-11-02T12:00:00Z'), 10))).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  test('an hourly schedule fires every real hour through fall-back: 25 fires on the 25-hour day', () => {
    const s = schedule({ cron: '0 * * * *', tz });
    // 2026-11-01 local midnight (EDT, 04:00Z) to the next local midnight (EST, 05:00Z next day)
    const times = fireTimes(s, at('2026-11-01T03:59:59Z'), at('2026-11-02T04:59:59Z'), 100);
    expect(times).toHaveLength(25);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(3_600_000);
  });

  test('an hourly schedule fires every real hour through spring-forward: 23 fires on the 23-hour day', () => {
    const s = schedule({ cron: '0 * * * *', tz });
    const times = fireTimes(s, at('2026-03-08T04:59:59Z'), at('2026-03-09T03:59:59Z'), 100);
    expect(times).toHaveLength(23);
  });
});

test('a 6-field cron reads seconds first and crosses the DST change without a gap or a repeat', () => {
  const s = schedule({ cron: '*/20 * * * * *', tz: 'America/New_York' });
  expect(iso(fireTimes(s, at('2026-03-08T06:59:30Z'), at('2026-03-08T07:00:40Z'), 10))).toEqual([
    '2026-03-08T06:59:40.000Z',
    '2026-03-08T07:00:00.000Z',
    '2026-03-08T07:00:20.000Z',
    '2026-03-08T07:00:40.000Z',
  ]);
});

test('--every fires at whole intervals from the creation time, after `after`, up to and including `until`', () => {
  const s = schedule({ everyMs: 5000, createdAt: 1_000_000 });
  expect(fireTimes(s, 1_000_000, 1_020_000, 10)).toEqual([1_005_000, 1_010_000, 1_015_000, 1_020_000]);
  expect(fireTimes(s, 1_007_000, 1_016_000, 10)).toEqual([1_010_000, 1_015_000]);
  expect(fireTimes(s, 1_000_000, 1_100_000, 3)).toHaveLength(3);
  expect(nextFireTime(s, 1_012_345)).toBe(1_015_000);
});

test('the next fire of a cron schedule is read in its zone', () => {
  const s = schedule({ cron: '0 9 * * *', tz: 'Europe/Berlin' });
  expect(new Date(nextFireTime(s, at('2026-06-01T10:00:00Z'))!).toISOString()).toBe('2026-06-02T07:00:00.000Z');
});

describe('checks', () => {
  test.each([
    ['* * * *', undefined, 'has 4 fields'],
    ['* * * * * * *', undefined, 'has 7 fields'],
    ['61 * * * *', undefined, 'is not a cron expression'],
    ['0 9 * * *', 'Mars/Olympus', 'is not an IANA time zone'],
  ])('cron %j in zone %s is refused: %s', (cron, tz, message) => {
    expect(cronError(cron, tz)).toContain(message);
  });

  test('a valid 5- or 6-field cron in a zone passes', () => {
    expect(cronError('0 9 * * 1-5', 'America/New_York')).toBeUndefined();
    expect(cronError('*/10 * * * * *')).toBeUndefined();
  });

  test.each([
    [{ cron: '0 9 * * *', everyMs: 5000 }, 'exactly one of --cron and --every'],
    [{}, 'exactly one of --cron and --every'],
    [{ everyMs: 5000, tz: 'UTC' }, '--tz only applies to --cron'],
    [{ everyMs: 100 }, 'everyMs'],
    [{ everyMs: 5000, overlap: 'queue' }, 'overlap'],
    [{ everyMs: 5000, name: '../x' }, 'a schedule name is'],
  ])('a schedule %j is refused with one line naming the problem (%s)', (fields, message) => {
    const parsed = parseSchedule({ name: 'n', command: ['true'], createdAt: 0, ...fields });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.message).toContain(message);
      expect(parsed.message).not.toContain('\n');
    }
  });

  test('defaults follow Temporal: overlap skip, catch-up latest within 7 days', () => {
    const s = schedule({ everyMs: 5000 });
    expect([s.overlap, s.catchUp, s.catchUpWindowMs, s.paused]).toEqual(['skip', 'latest', 7 * 86_400_000, false]);
  });
});
