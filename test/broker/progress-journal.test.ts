/**
 * The journal's progress records (live-task.ts `journalProgress`): the first partial's at once, then
 * at most one per interval, the latest partial's at the interval's end, and nothing after the task
 * is decided. A real journal in a temporary directory; time from a FakeClock.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { LiveTask } from '../../src/broker/live-task.js';
import { Journal, type JournalRecord } from '../../src/broker/history/journal.js';
import { silentLogger } from '../../src/broker/log.js';
import { DEFAULTS } from '../../src/broker/settings.js';
import { Task } from '../../src/broker/task/task.js';
import { FakeClock } from '../helpers/fake-clock.js';

const INTERVAL = DEFAULTS.progressJournalIntervalMs;
const opened: Journal[] = [];

afterEach(async () => {
  for (const journal of opened.splice(0)) await journal.close();
});

async function setUp(): Promise<{ task: Task; entry: LiveTask; clock: FakeClock; records: () => Promise<JournalRecord[]> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-progress-'));
  const journal = new Journal(dir, silentLogger);
  await journal.open();
  opened.push(journal);
  const clock = new FakeClock();
  const task = new Task({ id: 't1', spec: { command: 'x' }, label: 'x', cwd: '/', maxAttempts: 1 }, 10, () => {});
  const entry = new LiveTask(task, { max: 0 }, [], 60_000, { journal, results: undefined }, clock);
  task.startAttempt(1);
  const records = async (): Promise<JournalRecord[]> => {
    await journal.flush();
    const lines = readFileSync(journal.file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    return lines.map((line) => JSON.parse(line) as JournalRecord).filter((r) => r.e === 'progress');
  };
  return { task, entry, clock, records };
}

function partial(task: Task, entry: LiveTask, progress: number): void {
  task.recordPartial({ task_id: task.id, status: 'partial', data: { progress } });
  entry.journalProgress();
}

const progressOf = (records: JournalRecord[]): unknown[] => records.map((r) => (r as { progress?: number }).progress);

test('the first partial is journalled at once, the latest of an interval at its end', async () => {
  const { task, entry, clock, records } = await setUp();
  partial(task, entry, 1);
  expect(progressOf(await records())).toEqual([1]);
  for (let p = 2; p <= 40; p++) partial(task, entry, p);
  clock.advance(INTERVAL - 1);
  expect(progressOf(await records())).toEqual([1]);
  clock.advance(1);
  expect(progressOf(await records())).toEqual([1, 40]);
  // The next interval had no partial: nothing is written at its end, and the one after starts afresh.
  clock.advance(INTERVAL);
  expect(progressOf(await records())).toEqual([1, 40]);
  partial(task, entry, 50);
  expect(progressOf(await records())).toEqual([1, 40, 50]);
  expect(clock.pending).toBe(1);
});

test('at most one record per interval, however many partials come', async () => {
  const { task, entry, clock, records } = await setUp();
  for (let step = 0; step < 100; step++) {
    for (let i = 0; i < 50; i++) partial(task, entry, (step * 50 + i) % 100);
    clock.advance(INTERVAL / 4);
  }
  // 25 intervals of partials: the first record at once, then one at the end of each interval.
  const written = await records();
  expect(written.length).toBeGreaterThanOrEqual(25);
  expect(written.length).toBeLessThanOrEqual(26);
});

test('nothing is journalled after the task ended, and its timer is gone', async () => {
  const { task, entry, clock, records } = await setUp();
  partial(task, entry, 10);
  partial(task, entry, 20);
  entry.end(() => task.fail('error', 'failed'));
  expect(clock.pending).toBe(0);
  clock.advance(INTERVAL * 3);
  expect(progressOf(await records())).toEqual([10]);
});
