/**
 * Fault table, "the journal's disk": full, or read-only. The broker says so once, clearly, and keeps
 * running tasks. Uses tiny tmpfs mounts (needs root; skipped with the reason otherwise).
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, makeBroker, waitFor } from '../helpers/core.js';
import { cannotMount, captureLogger, expectNothingLeft, mountTmpfs, remountReadOnly } from '../helpers/reliability.js';

/** Writes zeros until the file system is full. */
function fillUp(dir: string): void {
  const fd = openSync(path.join(dir, 'filler'), 'w');
  const block = Buffer.alloc(4096);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

describe.skipIf(cannotMount)(`the journal's disk${cannotMount ? ` (skipped: ${cannotMount})` : ''}`, () => {
  test('a full disk: one clear error, tasks keep running and keep their results in memory', async () => {
    const dataDir = mountTmpfs('256k');
    const logger = captureLogger();
    const { broker, ipcDir } = makeBroker({ dataDir, logger });
    const before = broker.submit({ command: fixture('sdk-progress.mjs'), input: 'before' });
    await before.result;
    const journal = path.join(dataDir, 'journal.ndjson');
    await waitFor(() => readFileSync(journal, 'utf8').includes(`{"e":"ended","id":"${before.id}"`), 'the first result in the journal');
    expect(broker.historyError).toBeUndefined();

    // Inputs up to 64 KiB are journalled with the task: accepted while there was room, these need more
    // than is left once the disk is full, the journal's reserve included.
    const during = [1, 2, 3].map((n) => broker.submit({ command: fixture('quick.mjs'), input: { n, blob: 'b'.repeat(30_000) } }));
    fillUp(dataDir);
    const results = await Promise.all(during.map((t) => t.result));
    expect(results.map((r) => r.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await broker.onIdle();
    expect(broker.historyError).toMatch(
      /history journal .*journal\.ndjson cannot be written \(the disk is full\); tasks keep running but new results are not saved/,
    );
    expect(logger.at('error')).toEqual([broker.historyError]);
    // While the disk is full a new task is refused (X12, round 5); once there is room, later tasks run, without more errors.
    expect(() => broker.submit({ command: fixture('quick.mjs'), input: { n: 4 } })).toThrow(/the disk of the history .* is full/);
    rmSync(path.join(dataDir, 'filler'));
    const later = await waitFor(() => {
      try {
        return broker.submit({ command: fixture('quick.mjs'), input: { n: 4 } });
      } catch {
        return undefined;
      }
    }, 'the room to be seen again');
    expect((await later.result).data).toEqual({ n: 4 });
    await broker.onIdle();
    expect(logger.at('error')).toHaveLength(1);
    expect(broker.tasks().filter((t) => t.state === 'succeeded')).toHaveLength(5);
    await broker.close();
    // The half-written batch was dropped: the journal is whole lines only.
    const text = readFileSync(journal, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();

    // Space freed, broker restarted: history from before the failure is there, and saving works again.
    const { broker: again } = makeBroker({ dataDir, ipcDir });
    const warnings: string[] = [];
    again.on('warning', (message) => warnings.push(message));
    await again.ready;
    expect(warnings).toEqual([]);
    expect(again.historyError).toBeUndefined();
    expect(again.get(before.id)).toMatchObject({ state: 'succeeded' });
    const after = again.submit({ command: fixture('quick.mjs'), input: { n: 5 } });
    await after.result;
    await again.close();
    const { broker: reader } = makeBroker({ dataDir, ipcDir });
    await reader.ready;
    expect(reader.get(after.id)).toMatchObject({ state: 'succeeded', result: { data: { n: 5 } } });
    await expectNothingLeft(ipcDir);
  });

  test('a full disk (X12): tasks that ended meanwhile keep their results after a restart, none is missing; new ones are refused', async () => {
    const dataDir = mountTmpfs('2m');
    const { broker, ipcDir } = makeBroker({ dataDir });
    await broker.submit({ command: fixture('quick.mjs'), input: { n: 'before' } }).result;
    // Ten tasks with 1 KB inputs, accepted while there is room: ~30 KB of records, written once the
    // disk is full (the journal writes in the background), well past what its last page had free.
    const tasks = Array.from({ length: 10 }, (_, n) =>
      broker.submit({ command: fixture('quick.mjs'), input: { n, pad: 'p'.repeat(1000) } }),
    );
    fillUp(dataDir);
    expect((await Promise.all(tasks.map((task) => task.result))).map((r) => r.data)).toEqual(tasks.map((_, n) => ({ n })));
    const ids = tasks.map((task) => task.id);
    // A new task is refused before the disk is full, not reported done and lost (round 5).
    expect(() => broker.submit({ command: fixture('quick.mjs'), input: { n: 'late' } })).toThrow(
      /^the disk of the history \(.*\) is full \(\d+ KiB free\): new tasks are refused until some space is freed/,
    );
    await broker.close();
    // The journal wrote them into the room it kept for this (journal.reserve).
    expect(broker.historyError).toBeUndefined();

    rmSync(path.join(dataDir, 'filler'));
    const { broker: again } = makeBroker({ dataDir, ipcDir });
    await again.ready;
    // Was: the task whose `ended` record hit the full disk `interrupted` (crashed), the next ones missing.
    expect(ids.map((id) => again.get(id)?.state)).toEqual(ids.map(() => 'succeeded'));
    expect(again.get(ids[9]!)).toMatchObject({ result: { data: { n: 9 } } });
    await again.close();
    await expectNothingLeft(ipcDir);
  });

  test('a read-only disk: history still loads, one clear error, new tasks run', async () => {
    const dataDir = mountTmpfs('1m');
    const { broker: writer } = makeBroker({ dataDir });
    const old = writer.submit({ command: fixture('quick.mjs'), input: { n: 'old' } });
    await old.result;
    await writer.close();
    remountReadOnly(dataDir);

    const logger = captureLogger();
    const { broker, ipcDir } = makeBroker({ dataDir, logger });
    const warnings: string[] = [];
    broker.on('warning', (message) => warnings.push(message));
    await broker.ready;
    expect(broker.get(old.id)).toMatchObject({ state: 'succeeded', result: { data: { n: 'old' } } });
    expect(broker.historyError).toMatch(/cannot be written \(the file system is read-only\)/);
    expect(warnings).toEqual([broker.historyError]);
    expect(logger.at('error')).toEqual([broker.historyError]);
    const fresh = broker.submit({ command: fixture('sdk-progress.mjs'), input: 'new' });
    expect((await fresh.result).data).toMatchObject({ echo: 'new' });
    await broker.onIdle();
    expect(logger.at('error')).toHaveLength(1);
    await expectNothingLeft(ipcDir);
  });
});
