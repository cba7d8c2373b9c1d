/**
 * Issue 22 item 4: task lists are paged — newest first, TASK_PAGE_SIZE per page unless asked,
 * a cursor for the next page, a state filter — over a real broker and its history on disk.
 */
import { describe, expect, test } from 'vitest';
import { dispatch } from '../../src/bridge/calls.js';
import { createBrokerBridge } from '../../src/hub/broker-bridge.js';
import type { BridgeEvent } from '../../src/bridge/contract.js';
import { TASK_PAGE_SIZE, type TaskSnapshot } from '../../src/model/task.js';
import { writeHistory } from '../../bench/lib/history.js';
import { createTestBroker, fixture, tempDir } from '../helpers/core.js';

describe('task pages', () => {
  test('450 tasks of history and a live one page newest first, 200 a page, with a cursor; listTasks() still lists them all, oldest first', async () => {
    const dataDir = tempDir();
    const ids: string[] = writeHistory(dataDir, { count: 450, states: (i: number) => (i % 10 === 0 ? 'failed' : 'succeeded') });
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    const live = broker.submit({ command: fixture('quick.mjs') });
    await live.result;
    await live.finished;
    const newestFirst = [live.id, ...ids.slice().reverse()];

    const seen: string[] = [];
    let before: string | undefined;
    const sizes: number[] = [];
    for (;;) {
      const page = await bridge.listTaskPage(before === undefined ? {} : { before });
      expect(page.total).toBe(451);
      sizes.push(page.tasks.length);
      seen.push(...page.tasks.map((task: TaskSnapshot) => task.id));
      if (!page.next) break;
      before = page.next;
    }
    expect(TASK_PAGE_SIZE).toBe(200);
    expect(sizes).toEqual([200, 200, 51]);
    expect(seen).toEqual(newestFirst);

    // A task id is a cursor too; a limit and a state filter.
    const failed = await bridge.listTaskPage({ state: 'failed', limit: 10, before: ids[400]! });
    expect(failed.total).toBe(45);
    expect(failed.tasks.map((task: TaskSnapshot) => task.id)).toEqual(
      ids
        .filter((_, i) => i % 10 === 0 && i < 400)
        .reverse()
        .slice(0, 10),
    );
    expect(failed.next).toBeDefined();
    expect(await dispatch(bridge, 'listTaskPage', [{ limit: 0 }])).toMatchObject({ ok: false, error: { code: 'invalid_request' } });

    const all = await bridge.listTasks();
    expect(all.map((task) => task.id)).toEqual(newestFirst.slice().reverse());
    bridge.close();
  });

  test("info's recent commands read the newest tasks in place, live ones first: no snapshot is copied", async () => {
    // 450 tasks of one command line in history (the busy hub's case: info() used to copy five pages of them).
    const dataDir = tempDir();
    writeHistory(dataDir, { count: 450 });
    const { broker } = createTestBroker({ dataDir });
    await broker.ready;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    const done = broker.submit({ command: fixture('quick.mjs') });
    await done.finished;
    const running = broker.submit({ command: fixture('sleeper.mjs') });
    const original = globalThis.structuredClone;
    let clones = 0;
    globalThis.structuredClone = ((value: unknown, options?: StructuredSerializeOptions) => {
      clones += 1;
      return original(value, options);
    }) as typeof structuredClone;
    let recent;
    try {
      recent = (await bridge.info()).recent;
    } finally {
      globalThis.structuredClone = original;
    }
    expect(clones).toBe(0);
    expect(recent.map((request) => [request.command, ...(request.args ?? [])])).toEqual([
      [fixture('sleeper.mjs')],
      [fixture('quick.mjs')],
      ['node', 'agent.mjs'],
    ]);
    running.cancel();
    await running.finished;
    bridge.close();
  });

  test('over 10,000 tasks of history the first event is live tasks and the newest page, with the cursor of the older ones and the counts of all', async () => {
    const dataDir = tempDir();
    const ids: string[] = writeHistory(dataDir, { count: 10_000, states: (i: number) => (i % 100 === 7 ? 'failed' : 'succeeded') });
    const { broker } = createTestBroker({ dataDir, historyLimit: 20_000 });
    await broker.ready;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    // A live task, newest of all.
    const running = broker.submit({ command: fixture('sleeper.mjs'), input: { ms: 60_000 } });
    // Shown as running once its start is durable (issue 36): the first event of a subscription after that.
    await expect.poll(() => broker.get(running.id)?.state, { timeout: 20_000 }).toBe('running');
    const events: BridgeEvent[] = [];
    const unsubscribe = bridge.subscribe((event) => events.push(event));
    await expect
      .poll(() => events.find((e) => e.full)?.tasks.some((t) => t.id === running.id && t.state === 'running'), { timeout: 20_000 })
      .toBe(true);
    const first = events.find((e) => e.full)!;
    expect(first.tasks).toHaveLength(TASK_PAGE_SIZE);
    expect(first.tasks.map((t) => t.id)).toEqual([running.id, ...ids.slice(-(TASK_PAGE_SIZE - 1)).reverse()]);
    // Bounded: the picture of 10,000 tasks was ~6 MB; this one is the size of one page.
    expect(JSON.stringify(first).length).toBeLessThan(400_000);
    expect(first.counts).toEqual({ queued: 0, running: 1, succeeded: 9900, failed: 100, cancelled: 0, interrupted: 0 });
    expect(first.older).toBeDefined();

    // The older tasks page in from its cursor: the picture and the pages are every task, once.
    const seen = first.tasks.map((t) => t.id);
    for (let before = first.older; before !== undefined;) {
      const page = await bridge.listTaskPage({ before });
      seen.push(...page.tasks.map((t) => t.id));
      before = page.next;
    }
    expect(seen).toEqual([running.id, ...ids.slice().reverse()]);

    // Counts follow changes (here: the running task cancelled).
    const counts = () => events.filter((e) => e.counts).at(-1)?.counts;
    broker.cancel(running.id);
    await expect.poll(() => counts()?.cancelled, { timeout: 20_000 }).toBe(1);
    expect(counts()).toMatchObject({ running: 0, cancelled: 1, failed: 100 });
    unsubscribe();
    bridge.close();
    await broker.close();
  });
});
