/**
 * The schedule store on disk: schedules and fire records survive a reopen (a hub restart), files
 * are 0600 in a 0700 directory, writes are atomic (no temporary file left), a torn last record is
 * skipped, and a planted symlink or a directory others can write to is refused.
 */
import {
  appendFileSync,
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { parseSchedule, type Schedule } from '../../src/schedules/schedule.js';
import { ScheduleStore } from '../../src/schedules/store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bc-sched-'));
  dirs.push(dir);
  return join(dir, 'data');
}

function schedule(name: string, fields: Record<string, unknown> = {}): Schedule {
  const parsed = parseSchedule({ name, command: ['echo', 'hi'], everyMs: 2000, createdAt: 1000, ...fields });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.schedule;
}

test('schedules and fire records survive a reopen, and removing a schedule keeps its history', () => {
  const dir = dataDir();
  const store = new ScheduleStore(dir);
  store.put(schedule('b'));
  store.put(schedule('a', { cron: '0 9 * * *', everyMs: undefined, tz: 'Europe/Berlin' }));
  store.record([
    { schedule: 'a', at: 3000, outcome: 'ran', taskId: 't1', recordedAt: 3001 },
    { schedule: 'a', at: 5000, until: 9000, count: 3, outcome: 'skipped', reason: 'hub_down', recordedAt: 9001 },
    { schedule: 'a', at: 9500, outcome: 'ran', taskId: 't2', manual: true, recordedAt: 9500 },
  ]);
  const again = new ScheduleStore(dir);
  expect(again.list().map((s) => s.name)).toEqual(['a', 'b']);
  expect(again.get('a')).toEqual(store.get('a'));
  expect(again.history('a').map((r) => r.taskId ?? r.reason)).toEqual(['t1', 'hub_down', 't2']);
  expect(again.lastFireAt('a')).toBe(9000); // a run-now fire is not a schedule time
  expect(again.remove('a')).toBe(true);
  expect(again.remove('a')).toBe(false);
  const third = new ScheduleStore(dir);
  expect(third.list().map((s) => s.name)).toEqual(['b']);
  expect(third.history('a')).toHaveLength(3);
});

test('files are 0600 in a 0700 directory and no temporary file is left behind', () => {
  const dir = dataDir();
  const store = new ScheduleStore(dir);
  for (let i = 0; i < 5; i++) store.put(schedule(`s${i}`));
  store.record([{ schedule: 's0', at: 3000, outcome: 'ran', taskId: 't', recordedAt: 3000 }]);
  expect(lstatSync(store.dir).mode & 0o777).toBe(0o700);
  expect(readdirSync(store.dir).sort()).toEqual(['fires.jsonl', 'schedules.json']);
  for (const file of readdirSync(store.dir)) expect(lstatSync(join(store.dir, file)).mode & 0o777).toBe(0o600);
});

test('a torn last record and a damaged line are skipped; the rest is kept', () => {
  const dir = dataDir();
  const store = new ScheduleStore(dir);
  store.record([{ schedule: 'a', at: 3000, outcome: 'ran', taskId: 't1', recordedAt: 3000 }]);
  appendFileSync(join(store.dir, 'fires.jsonl'), '{"schedule":"a","at":1}\n{"schedule":"a","at":5000,"outc');
  expect(new ScheduleStore(dir).history('a').map((r) => r.taskId)).toEqual(['t1']);
});

test('a symlink planted in place of the schedules file is refused, not followed', () => {
  const dir = dataDir();
  const store = new ScheduleStore(dir);
  const elsewhere = join(dir, '..', 'elsewhere.json');
  writeFileSync(elsewhere, JSON.stringify({ schedules: [schedule('evil')] }));
  symlinkSync(elsewhere, join(store.dir, 'schedules.json'));
  expect(() => new ScheduleStore(dir)).toThrow(/schedules\.json cannot be read \(ELOOP\)/);
});

test('a schedules directory others can write to is refused with what to do', () => {
  const dir = dataDir();
  mkdirSync(join(dir, 'schedules'), { recursive: true, mode: 0o700 });
  chmodSync(join(dir, 'schedules'), 0o777);
  expect(() => new ScheduleStore(dir)).toThrow(/Schedules directory .* is writable by everyone/);
});

test('a schedule keeps its newest fire records only, on disk and after a reopen, other schedules untouched', () => {
  const dir = dataDir();
  const store = new ScheduleStore(dir, { firesKept: 100 });
  store.put(schedule('busy'));
  store.put(schedule('quiet'));
  store.record([{ schedule: 'quiet', at: 500, outcome: 'ran', taskId: 'q', recordedAt: 500 }]);
  // One append per fire: 1,000 skips of an `--every 1s` schedule, their reasons alternating (so no
  // two in a row are one run of skips).
  for (let i = 0; i < 1000; i++) {
    const reason = i % 2 === 0 ? 'paused' : 'overlap';
    store.record([{ schedule: 'busy', at: 1000 + i * 1000, outcome: 'skipped', reason, recordedAt: 1000 + i * 1000 }]);
  }
  const lines = readFileSync(join(store.dir, 'fires.jsonl'), 'utf8').trim().split('\n');
  expect(lines.length).toBeLessThanOrEqual(1 + 150);
  const history = store.history('busy');
  expect(history.length).toBeGreaterThanOrEqual(100);
  expect(history.length).toBeLessThanOrEqual(150);
  expect(history.at(-1)!.at).toBe(1000 + 999 * 1000);
  expect(store.lastFireAt('busy')).toBe(1000 + 999 * 1000);
  const again = new ScheduleStore(dir, { firesKept: 100 });
  expect(again.history('busy')).toEqual(history);
  expect(again.history('quiet').map((r) => r.taskId)).toEqual(['q']);
  expect(readdirSync(store.dir).sort()).toEqual(['fires.jsonl', 'schedules.json']);
});
