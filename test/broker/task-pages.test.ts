/**
 * Issue 22 item 4: task lists are paged — newest first, TASK_PAGE_SIZE per page unless asked,
 * a cursor for the next page, a state filter — over a real broker and its history on disk.
 */
import { describe, expect, test } from 'vitest';
import { dispatch } from '../../src/bridge/calls.js';
import { createBrokerBridge } from '../../src/hub/broker-bridge.js';
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
});
