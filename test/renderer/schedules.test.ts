import { describe, expect, test } from 'vitest';
import { cadenceText, fireText, fireTimeText, lastRunText, localTime, scheduleCommand } from '../../src/renderer/schedules.js';

const AT = Date.parse('2026-12-05T10:51:02Z');

describe('the Schedules view in words', () => {
  test('a cadence is an interval or a cron expression with the zone it is read in', () => {
    expect(cadenceText({ everyMs: 2000 })).toBe('every 2s');
    expect(cadenceText({ everyMs: 3_600_000 })).toBe('every 1h00m');
    expect(cadenceText({ cron: '0 9 * * 1-5', tz: 'Europe/Paris' })).toBe('cron 0 9 * * 1-5 (Europe/Paris)');
    expect(cadenceText({ cron: '*/5 * * * *' })).toBe("cron */5 * * * * (hub's zone)");
  });

  test('a command is shown as a quoted command line, a preset by its name', () => {
    expect(scheduleCommand({ command: ['sh', '-c', 'echo $HOME; rm -rf /'] })).toBe('sh -c "echo $HOME; rm -rf /"');
    expect(scheduleCommand({ preset: 'echo' })).toBe('preset echo');
  });

  test('a fire says whether it ran, and why one was skipped', () => {
    expect(fireText({ outcome: 'ran' })).toBe('ran');
    expect(fireText({ outcome: 'ran', catchUp: true })).toBe('ran (catch-up)');
    expect(fireText({ outcome: 'ran', manual: true })).toBe('ran (run now)');
    expect(fireText({ outcome: 'buffered' })).toBe('waits for the active run to end');
    expect(fireText({ outcome: 'skipped', reason: 'overlap' })).toBe('skipped: a run was still active');
    expect(fireText({ outcome: 'skipped', reason: 'paused' })).toBe('skipped: the schedule was paused');
    expect(fireText({ outcome: 'skipped', reason: 'hub_down', count: 12 })).toBe('skipped ×12: the hub was down');
    expect(fireText({ outcome: 'skipped', reason: 'refused' })).toBe('skipped: the run policy refused its command');
    expect(fireText({ outcome: 'elsewhere', hub: 'hub-b' })).toBe('decided by hub hub-b (fleet)');
  });

  test('a run of skipped fires shows its first and last time', () => {
    expect(fireTimeText({ at: AT })).toBe(localTime(AT));
    expect(fireTimeText({ at: AT, until: AT + 60_000 })).toBe(`${localTime(AT)} … ${localTime(AT + 60_000)}`);
  });

  test('the last run names its state, and a newer skip is added to it', () => {
    const ran = { schedule: 's', at: AT, outcome: 'ran' as const, taskId: 't1', recordedAt: AT };
    const skipped = { schedule: 's', at: AT + 2000, outcome: 'skipped' as const, reason: 'overlap' as const, recordedAt: AT + 2000 };
    expect(lastRunText({})).toBe('Not run yet');
    expect(lastRunText({ lastRun: ran, lastFire: ran, lastRunState: 'succeeded' })).toBe(`Last run ${localTime(AT)} · Succeeded`);
    expect(lastRunText({ lastRun: ran, lastFire: skipped, lastRunState: 'running' })).toBe(
      `Last run ${localTime(AT)} · Running · last fire skipped: a run was still active`,
    );
  });
});
