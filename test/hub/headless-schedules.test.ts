/**
 * `serve` fires the schedules in its data directory: a hub that was down across a fire time runs
 * one catch-up for it as soon as it starts, through the `schedule` door, and records it; a damaged
 * schedules.json keeps it up, without schedules, with one line saying which file and how to repair it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { ScheduleStore, parseSchedule } from '../../src/schedules/index.js';
import { fixture, waitFor } from '../helpers/core.js';
import { startTestHeadless, type TestHeadless } from '../helpers/panel.js';
import { cli, hubEnv, startHub } from './control/hub-process.js';

let hub: TestHeadless | undefined;
afterEach(async () => {
  await hub?.stop();
  hub = undefined;
});

test('a hub started after a missed fire time runs one catch-up for it and records it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-sched-serve-'));
  const createdAt = Date.now() - 3 * 60_000 - 30_000; // fire times 2m30s, 1m30s and 30s ago were missed
  const parsed = parseSchedule({ name: 'hourly', everyMs: 60_000, command: [fixture('quick.mjs')], createdAt });
  if (!parsed.ok) throw new Error(parsed.message);
  new ScheduleStore(path.join(dir, 'data')).put(parsed.schedule);

  hub = await startTestHeadless({ dir });
  const scheduler = hub.scheduler!;
  const store = new ScheduleStore(path.join(dir, 'data'));
  const fires = store.history('hourly');
  expect(fires.map((f) => [f.at - createdAt, f.outcome, f.reason ?? f.catchUp])).toEqual([
    [60_000, 'skipped', 'hub_down'],
    [180_000, 'ran', true],
  ]);
  expect(fires[0]!.until! - createdAt).toBe(120_000);
  const task = await waitFor(() => {
    const snapshot = hub!.broker.get(fires[1]!.taskId!);
    return snapshot?.state === 'succeeded' && snapshot;
  }, 'the catch-up run to succeed');
  expect(task.label).toBe('schedule hourly');
  await waitFor(() => scheduler.activeRuns('hourly') === 0, 'the run to be seen ending');
});

test('a damaged schedules.json (Y29): serve stays up without schedules, names the file and how to repair it', async () => {
  const env = hubEnv();
  const file = path.join(env.dir, 'data', 'schedules', 'schedules.json');
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, '{"version": 1, "schedules": [ {"name": "cut', { mode: 0o600 });
  const serve = await startHub(env);
  expect(serve.stderr()).toContain(`${file} is damaged (`);
  expect(serve.stderr()).toContain('repair it (JSON: {"version": 1, "schedules": [ … ]}) or move it away');
  // The hub serves tasks; a schedule is refused with the same line, and the file is left for repair.
  const run = await cli(['run', '--', 'node', fixture('quick.mjs')], env.env);
  expect(run.code).toBe(0);
  const add = await cli(['schedule', 'add', 'again', '--every', '2s', '--', 'node', fixture('quick.mjs')], env.env);
  expect(add.code).not.toBe(0);
  expect(add.stderr).toContain(`${file} is damaged`);
  expect(fs.readFileSync(file, 'utf8')).toBe('{"version": 1, "schedules": [ {"name": "cut');
});
