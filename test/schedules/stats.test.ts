/**
 * A schedule's figures (src/schedules/stats.ts): from its fire records and the tasks they name —
 * runs by how their tasks ended, skips by reason (a collapsed record by its count), tokens and cost
 * summed — and `backchannel stats` printing them, as a process over a data directory a real broker
 * and a real scheduler (injected clock) wrote.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { HubScheduler } from '../../src/hub/scheduler.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { ScheduleStore, type FireRecord } from '../../src/schedules/index.js';
import { scheduleStats } from '../../src/schedules/stats.js';
import { createTestBroker, fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';

const T0 = Date.parse('2026-12-05T09:00:00Z');
const BIN = path.join(ROOT, 'bin/backchannel.js');
const COSTLY = path.join(ROOT, 'test/schedules/fixtures/costly.mjs');

const fire = (at: number, rest: Partial<FireRecord>): FireRecord => ({
  schedule: 's',
  at: T0 + at,
  outcome: 'ran',
  recordedAt: T0 + at,
  ...rest,
});

const NONE = { overlap: 0, paused: 0, hub_down: 0, budget_spent: 0, refused: 0 };

describe('scheduleStats', () => {
  const tasks: Record<string, Pick<TaskSnapshot, 'state' | 'usage'>> = {
    a: { state: 'succeeded', usage: { input: 10, output: 5, costUsd: 0.5 } },
    b: { state: 'failed', usage: { input: 1, output: 1 } },
    c: { state: 'interrupted' },
    d: { state: 'cancelled' },
    e: { state: 'running', usage: { input: 2, output: 0, costUsd: 0.25 } },
  };
  const records: FireRecord[] = [
    fire(0, { taskId: 'a' }),
    fire(1000, { outcome: 'skipped', reason: 'overlap' }),
    fire(2000, { outcome: 'buffered' }),
    fire(2000, { taskId: 'b' }),
    fire(3000, { outcome: 'skipped', reason: 'hub_down', until: T0 + 9000, count: 7 }),
    fire(10_000, { taskId: 'c', catchUp: true }),
    fire(11_000, { taskId: 'd', manual: true }),
    fire(12_000, { taskId: 'gone' }),
    fire(13_000, { outcome: 'skipped', reason: 'paused', until: T0 + 20_000 }),
    fire(21_000, { taskId: 'e' }),
    fire(22_000, { schedule: 'other', taskId: 'a' }),
    fire(23_000, { outcome: 'elsewhere', hub: 'hub-b' }), // another hub of the fleet decided it: its figures count it
  ];

  test('counts runs by how their tasks ended, skips by reason and count, and sums tokens and cost', () => {
    expect(scheduleStats('s', records, (id) => tasks[id])).toEqual({
      schedule: 's',
      fires: 15,
      runs: 6,
      succeeded: 1,
      failed: 2,
      cancelled: 1,
      active: 1,
      unknown: 1,
      skipped: { ...NONE, overlap: 1, hub_down: 7, paused: 1 },
      tokens: 19,
      costUsd: 0.75,
    });
  });

  test('counts only the fire times in the range: since inclusive, until exclusive', () => {
    const stats = scheduleStats('s', records, (id) => tasks[id], { since: T0 + 2000, until: T0 + 11_000 });
    expect(stats).toMatchObject({ fires: 9, runs: 2, failed: 2, skipped: { ...NONE, hub_down: 7 }, tokens: 2, costUsd: 0 });
  });

  test('a schedule with no fires has zero figures', () => {
    expect(scheduleStats('none', records, () => undefined)).toEqual({
      schedule: 'none',
      fires: 0,
      runs: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
      active: 0,
      unknown: 0,
      skipped: NONE,
      tokens: 0,
      costUsd: 0,
    });
  });
});

function stats(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BIN, 'stats', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('backchannel stats per schedule', () => {
  test('prints each schedule: runs, how they ended, skips by reason, tokens and cost, from what a real hub recorded', async () => {
    const dataDir = tempDir('bc-sched-stats-');
    const { broker, close } = createTestBroker({ dataDir });
    await broker.ready;
    const clock = { now: T0 };
    const scheduler = new HubScheduler({
      store: new ScheduleStore(dataDir),
      submit: (spec) => broker.submit(spec),
      runPolicy: new RunPolicy([
        { name: 'costly', command: COSTLY },
        { name: 'crash', command: fixture('crash.mjs') },
      ]),
      logger: silentLogger,
      now: () => clock.now,
      tickMs: 0,
    });
    try {
      scheduler.add({ name: 'costly', everyMs: 60_000, command: [COSTLY] });
      scheduler.add({ name: 'crashy', everyMs: 60_000, command: [fixture('crash.mjs')] });
      scheduler.start();
      for (let i = 1; i <= 2; i++) {
        clock.now = T0 + i * 60_000;
        scheduler.tick();
        await waitFor(() => scheduler.activeRuns('costly') + scheduler.activeRuns('crashy') === 0, `fire ${i} to end`);
      }
      scheduler.setPaused('costly', true);
      clock.now = T0 + 3 * 60_000;
      scheduler.tick();
      await waitFor(() => scheduler.activeRuns('crashy') === 0, 'the last fire to end');
    } finally {
      scheduler.stop();
      await broker.close();
    }
    const run = stats(['--json', '--data-dir', dataDir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout) as { schedules: unknown; total: { count: number } };
    expect(printed.total.count).toBe(5);
    expect(printed.schedules).toEqual([
      {
        schedule: 'costly',
        fires: 3,
        runs: 2,
        succeeded: 2,
        failed: 0,
        cancelled: 0,
        active: 0,
        unknown: 0,
        skipped: { ...NONE, paused: 1 },
        tokens: 20,
        costUsd: 0.5,
      },
      {
        schedule: 'crashy',
        fires: 3,
        runs: 3,
        succeeded: 0,
        failed: 3,
        cancelled: 0,
        active: 0,
        unknown: 0,
        skipped: NONE,
        tokens: 0,
        costUsd: 0,
      },
    ]);
    const text = stats(['--data-dir', dataDir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /\nSchedules \(skipped fires by reason\):\nschedule\s+fires\s+runs\s+ok\s+failed\s+cancelled\s+active\s+gone\s+overlap\s+paused\s+hub_down\s+budget_spent\s+refused\s+tokens\s+cost\n/,
    );
    expect(text.stdout).toMatch(/\ncostly\s+3\s+2\s+2\s+0\s+0\s+0\s+0\s+0\s+1\s+0\s+0\s+0\s+20\s+\$0\.5\d*\n/);
    expect(text.stdout).toMatch(/\ncrashy\s+3\s+3\s+0\s+3\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+\$0\.?0*\n/);
    // Fires counted by their time: only the last minute.
    const since = stats(['--json', '--since', new Date(T0 + 2 * 60_000).toISOString(), '--data-dir', dataDir]);
    expect((JSON.parse(since.stdout) as { schedules: Array<{ fires: number }> }).schedules.map((s) => s.fires)).toEqual([2, 2]);
    await close();
  });

  test('a data directory without schedules gets none in the JSON, and no schedules directory', () => {
    const dataDir = tempDir('bc-sched-stats-');
    const run = stats(['--json', '--data-dir', dataDir]);
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { schedules: unknown }).schedules).toEqual([]);
    expect(existsSync(path.join(dataDir, 'schedules'))).toBe(false);
  });
});
