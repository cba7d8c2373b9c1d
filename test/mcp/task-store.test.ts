/** The MCP task store over a stand-in bridge: lastUpdatedAt, ttl, a cancel that sticks, status changes to report. */
import { describe, expect, test } from 'vitest';
import type { BackchannelBridge } from '../../src/bridge/contract.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { taskSnapshot } from './task-snapshot.js';
import { BridgeTaskStore, TTL_TAG } from '../../src/mcp/task-store.js';

function store(): { store: BridgeTaskStore; task: TaskSnapshot; cancelled: string[] } {
  const task = taskSnapshot({
    id: 't1',
    startedAt: '2026-01-01T00:00:01.000Z',
    tags: { source: 'mcp', [TTL_TAG]: '60000' },
  });
  const cancelled: string[] = [];
  const bridge = {
    getTask: async () => ({ task: structuredClone(task), log: [] }),
    cancel: async (id: string) => void cancelled.push(id),
  } as unknown as BackchannelBridge;
  const tasks = new BridgeTaskStore(bridge, async () => 't1');
  return { store: tasks, task, cancelled };
}

const request = { method: 'tools/call', params: { name: 'run_task', arguments: {}, task: { ttl: 60_000 } } };

describe('BridgeTaskStore', () => {
  test('lastUpdatedAt moves with every status change, also one the snapshot has no time for (an answered question)', async () => {
    const { store: tasks, task } = store();
    const working = (await tasks.createTask({ ttl: 60_000 }, 1, request)).lastUpdatedAt;
    expect(working).toBe('2026-01-01T00:00:01.000Z');
    task.pendingQuestion = { askId: 'a', question: 'Which?', askedAt: '2026-01-01T00:00:02.000Z' };
    expect(await tasks.getTask('t1')).toMatchObject({ status: 'input_required', lastUpdatedAt: '2026-01-01T00:00:02.000Z', ttl: 60_000 });
    delete task.pendingQuestion;
    const answered = (await tasks.getTask('t1'))!;
    expect(answered.status).toBe('working');
    expect(answered.lastUpdatedAt > '2026-01-01T00:00:02.000Z').toBe(true);
    expect((await tasks.getTask('t1'))!.lastUpdatedAt).toBe(answered.lastUpdatedAt);
  });

  test('a task that ends before the moment its answer was seen keeps the later time, however often it is described', async () => {
    const { store: tasks, task } = store();
    await tasks.createTask({ ttl: 60_000 }, 1, request);
    task.pendingQuestion = { askId: 'a', question: 'Which?', askedAt: '2026-01-01T00:00:02.000Z' };
    await tasks.getTask('t1');
    delete task.pendingQuestion;
    // The answer is stamped by this server's clock (now); the agent's end comes from the hub's, earlier.
    const answered = (await tasks.getTask('t1'))!.lastUpdatedAt;
    task.state = 'succeeded';
    task.endedAt = new Date(Date.parse(answered) - 7).toISOString();
    const first = (await tasks.getTask('t1'))!;
    const again = (await tasks.getTask('t1'))!;
    expect(first).toMatchObject({ status: 'completed', lastUpdatedAt: answered });
    expect(again.lastUpdatedAt).toBe(answered);
  });

  test('a cancelled task stays cancelled, even when its agent then succeeds; each change is reported once', async () => {
    const { store: tasks, task, cancelled } = store();
    await tasks.createTask({ ttl: 60_000 }, 1, request);
    expect(tasks.statusChange(task)).toBeUndefined();
    await tasks.updateTaskStatus('t1', 'cancelled');
    expect(cancelled).toEqual(['t1']);
    const reported = tasks.statusChange(task)!;
    expect(reported).toMatchObject({ status: 'cancelled', statusMessage: 'cancelling' });
    expect(reported.lastUpdatedAt > task.startedAt!).toBe(true);
    const endedAt = new Date(Date.parse(reported.lastUpdatedAt) + 1000).toISOString();
    Object.assign(task, { state: 'succeeded', endedAt });
    expect(await tasks.getTask('t1')).toMatchObject({ status: 'cancelled', lastUpdatedAt: endedAt });
    expect(tasks.statusChange(task)).toBeUndefined();
  });

  test('a task without a ttl tag reports null (unlimited); a plain run_task call is not reported', async () => {
    const { store: tasks, task } = store();
    delete task.tags![TTL_TAG];
    expect((await tasks.createTask({}, 1, { method: 'tools/call', params: { name: 'run_task' } })).ttl).toBeNull();
    task.pendingQuestion = { askId: 'a', question: 'Which?', askedAt: '2026-01-01T00:00:02.000Z' };
    expect(tasks.statusChange(task)).toBeUndefined();
    expect(tasks.isMcpTask('t1')).toBe(false);
  });
});
