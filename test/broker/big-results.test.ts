/**
 * Issue 22 item 4, results out of memory: a big final payload is written once, to its own file in
 * the data directory; snapshots, lists and the journal carry its summary; `taskResult` serves it
 * whole, also after a restart; it leaves the disk with the task; a planted symlink is never followed.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, test } from 'vitest';
import { JOURNAL_FILE } from '../../src/broker/history/journal.js';
import { RESULTS_DIR } from '../../src/broker/history/results.js';
import type { TaskBroker } from '../../src/broker/index.js';
import { createBrokerBridge } from '../../src/hub/broker-bridge.js';
import { RESULT_INLINE_MAX_BYTES, RESULT_PREVIEW_CHARS } from '../../src/model/task.js';
import { withoutContent, type FinalPayload } from '../../src/protocol/index.js';
import { createTestBroker, fixture, tempDir, waitFor } from '../helpers/core.js';

const TEN_MB = 10 * 1024 * 1024;

function bridgeOf(broker: TaskBroker) {
  return createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
}

async function bigTask(broker: TaskBroker, bytes = TEN_MB): Promise<{ id: string; payload: FinalPayload }> {
  const handle = broker.submit({ command: fixture('big-result.mjs'), input: { bytes } });
  const payload = await handle.result;
  await handle.finished;
  return { id: handle.id, payload };
}

function resultFiles(dataDir: string): string[] {
  const dir = path.join(dataDir, RESULTS_DIR);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

describe('big results on disk', () => {
  test('five 10 MB results are written once each, to their own files: the journal stays under 100 KB', async () => {
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir, concurrency: 2 });
    await broker.ready;
    const done = await Promise.all([1, 2, 3, 4, 5].map(() => bigTask(broker)));
    await broker.close();
    const journalBytes = statSync(path.join(dataDir, JOURNAL_FILE)).size;
    expect(journalBytes).toBeLessThan(100 * 1024);
    expect(resultFiles(dataDir)).toEqual(done.map(({ id }) => `${id}.json`).sort());
    for (const { id, payload } of done) {
      const file = path.join(dataDir, RESULTS_DIR, `${id}.json`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(withoutContent(payload)));
    }
  });

  test("finished 10 MB results leave the broker's memory (the task, its payload and every slice of it); taskResult still has them", async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir, concurrency: 2 });
    await broker.ready;
    const bridge = bridgeOf(broker);
    const unsubscribe = bridge.subscribe(() => {});
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    // Only ids and weak references leave this function: nothing here holds a task or its payload.
    const run = async (): Promise<{ id: string; data: WeakRef<object> }> => {
      const { id, payload } = await bigTask(broker);
      return { id, data: new WeakRef(payload.data as object) };
    };
    const done = await Promise.all([1, 2, 3, 4].map(run));
    await broker.onIdle();
    // Collected once nothing holds them: a collection per turn until then (a payload kept for good times out).
    await waitFor(
      () => {
        gc();
        return done.every(({ data }) => data.deref() === undefined);
      },
      'the four payloads to be collected',
      5000,
      20,
    );
    gc();
    // Each result is 20 MB in memory (a two-byte string): four kept would be 80 MB.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(20 * 1024 * 1024);
    const whole = await bridge.taskResult(done[0]!.id);
    expect((whole?.data as { text: string }).text.length).toBe(TEN_MB);
    unsubscribe();
    bridge.close();
  });

  test('snapshots, the task list, a page and the journal carry the summary only; taskResult returns the whole payload byte-exact', async () => {
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    const bridge = bridgeOf(broker);
    const { id, payload } = await bigTask(broker);
    // The in-process handle still resolved with all of it.
    expect((payload.data as { text: string }).text.length).toBe(TEN_MB);
    const whole = JSON.stringify(withoutContent(payload));

    const snapshot = broker.get(id)!;
    expect(snapshot.result).toBeUndefined();
    expect(snapshot.resultSummary).toMatchObject({ bytes: Buffer.byteLength(whole), status: 'success' });
    expect(snapshot.resultSummary!.preview.length).toBe(RESULT_PREVIEW_CHARS);
    expect(snapshot.resultSummary!.preview.startsWith('{"text":"abcdefghij你好')).toBe(true);
    expect(snapshot.resultSummary!.meta).toMatchObject({ channel: 'socket', attempts: 1 });
    expect(JSON.stringify(snapshot).length).toBeLessThan(4096);
    const listed = (await bridge.listTasks()).find((task) => task.id === id)!;
    expect(listed.result).toBeUndefined();
    expect(listed.resultSummary?.bytes).toBe(Buffer.byteLength(whole));
    const page = await bridge.listTaskPage({});
    expect(page.tasks[0]).toEqual(listed);
    expect((await bridge.getTask(id)).task.result).toBeUndefined();

    expect(JSON.stringify(await bridge.taskResult(id))).toBe(whole);
    await broker.close();
    bridge.close();
  });

  test('a result under the threshold stays inline, in the snapshot, and no file is written; taskResult serves it too (and any result of an in-memory broker)', async () => {
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    const { id, payload } = await bigTask(broker, 1000);
    expect(JSON.stringify(payload).length).toBeLessThan(RESULT_INLINE_MAX_BYTES);
    expect(broker.get(id)?.result).toEqual(withoutContent(payload));
    expect(broker.get(id)?.resultSummary).toBeUndefined();
    expect(await bridgeOf(broker).taskResult(id)).toEqual(withoutContent(payload));
    expect(resultFiles(dataDir)).toEqual([]);
    // Without a data directory a big result stays inline too, as before.
    const { broker: inMemory } = createTestBroker();
    await inMemory.ready;
    const big = await bigTask(inMemory, 200_000);
    expect(inMemory.get(big.id)?.result).toEqual(withoutContent(big.payload));
    expect(inMemory.get(big.id)?.resultSummary).toBeUndefined();
    expect(await bridgeOf(inMemory).taskResult(big.id)).toEqual(withoutContent(big.payload));
  });

  test('a result file is removed when its task leaves history (historyLimit)', async () => {
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir, historyLimit: 2, concurrency: 1 });
    await broker.ready;
    const removed: string[] = [];
    broker.on('removed', (ids) => removed.push(...ids));
    const first = await bigTask(broker, 200_000);
    const second = await bigTask(broker, 200_000);
    expect(resultFiles(dataDir)).toEqual([`${first.id}.json`, `${second.id}.json`].sort());
    const third = await bigTask(broker, 200_000);
    expect(removed).toEqual([first.id]);
    expect(resultFiles(dataDir)).toEqual([`${second.id}.json`, `${third.id}.json`].sort());
  });

  test('a restarted broker over the same data directory still serves the whole result; orphan files are removed', async () => {
    const dataDir = tempDir();
    const first = createTestBroker({ dataDir });
    await first.broker.ready;
    const { id, payload } = await bigTask(first.broker, 2 * 1024 * 1024);
    await first.close();
    const orphan = path.join(dataDir, RESULTS_DIR, '01900000-0000-7000-8000-00000000dead.json');
    writeFileSync(orphan, '{}', { mode: 0o600 });

    const second = createTestBroker({ dataDir });
    await second.broker.ready;
    const bridge = bridgeOf(second.broker);
    expect(second.broker.get(id)).toMatchObject({ state: 'succeeded', resultSummary: { status: 'success' } });
    expect(second.broker.get(id)?.result).toBeUndefined();
    expect(JSON.stringify(await bridge.taskResult(id))).toBe(JSON.stringify(withoutContent(payload)));
    expect(existsSync(orphan)).toBe(false);
    bridge.close();
  });

  test('a symlink planted at the result path is not followed: refused with a warning, the task still succeeds in memory', async () => {
    const dataDir = tempDir();
    const outside = path.join(tempDir(), 'victim.txt');
    writeFileSync(outside, 'untouched');
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    const warnings: string[] = [];
    broker.on('warning', (message) => warnings.push(message));
    const handle = broker.submit({ command: fixture('big-result.mjs'), input: { bytes: 1024 * 1024 } });
    // The id is known at once; the agent has not even started: plant the link where its result goes.
    const planted = path.join(dataDir, RESULTS_DIR, `${handle.id}.json`);
    symlinkSync(outside, planted);
    const payload = await handle.result;
    await handle.finished;

    expect((payload.data as { text: string }).text.length).toBe(1024 * 1024);
    expect(readFileSync(outside, 'utf8')).toBe('untouched');
    expect(lstatSync(planted).isSymbolicLink()).toBe(true);
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`result of task ${handle.id}: .*already exists.*not followed`))]);
    // Kept in memory, whole, as without a data directory.
    expect(broker.get(handle.id)?.result).toEqual(withoutContent(payload));
    expect(await bridgeOf(broker).taskResult(handle.id)).toEqual(withoutContent(payload));
  });

  test('a small result is written to the journal once (the exit record carries no second copy)', async () => {
    const dataDir = tempDir();
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    await bigTask(broker, 5000);
    await broker.close();
    const journal = readFileSync(path.join(dataDir, JOURNAL_FILE), 'utf8');
    const withResult = journal.split('\n').filter((line) => line.includes('"text":"abcdefghij'));
    expect(withResult).toHaveLength(1);
  });
});
