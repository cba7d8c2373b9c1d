/**
 * The broker bridge coalesces a chatty broker into at most one event a frame with each task at most
 * once per event, and shows history from an earlier run; one task's feed takes each picture from its
 * update, not from the broker; the change calls are the coding kind's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { BridgeEvent, TaskFeedEvent } from '../../src/bridge/contract.js';
import { createBrokerBridge, type BrokerLike } from '../../src/hub/broker-bridge.js';
import { distinctCommands } from '../../src/hub/recent-commands.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { fixture, makeBroker, waitFor } from '../helpers/core.js';
import { connectHub } from '../../src/client/hub-client.js';
import { createHttpBridge } from '../../src/renderer/http-bridge.js';
import { demoRequest, NodeEventSource, origin, startTestHeadless, waitForTask, type TestHeadless } from '../helpers/panel.js';

let headless: TestHeadless | undefined;
afterEach(async () => {
  await headless?.stop();
  headless = undefined;
});

describe('coalescing', () => {
  test('four agents sending 300 partials each reach a subscriber at most once a frame (16 ms), each task once per event', async () => {
    headless = await startTestHeadless({ concurrency: 4 });
    const { bridge } = headless;
    const events: { at: number; event: BridgeEvent }[] = [];
    const unsubscribe = bridge.subscribe((event) => events.push({ at: Date.now(), event }));
    let updates = 0;
    headless.broker.on('update', () => updates++);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await bridge.submit(demoRequest('progress', ['--steps=300', '--interval=1'], `chatty ${i}`))).id);
    const started = Date.now();
    await Promise.all(ids.map((id) => waitForTask(bridge.subscribe, (task) => task.id === id && task.state === 'succeeded')));
    const elapsed = Date.now() - started;
    unsubscribe();

    expect(updates).toBeGreaterThan(1200);
    const deltas = events.filter((e) => !e.event.full);
    // One flush per frame (16 ms) at most — 100 ms while the broker is saturated — plus one already scheduled at the start.
    expect(deltas.length).toBeLessThanOrEqual(Math.ceil(elapsed / 16) + 2);
    for (const { event } of deltas) {
      const seen = event.tasks.map((t) => t.id);
      expect(new Set(seen).size).toBe(seen.length);
    }
    for (let i = 1; i < deltas.length; i++) expect(deltas[i]!.at - deltas[i - 1]!.at).toBeGreaterThanOrEqual(14);
    // Nothing is lost: the last event about each task has its final state.
    for (const id of ids) {
      const last = deltas
        .flatMap((e) => e.event.tasks)
        .filter((t) => t.id === id)
        .at(-1);
      expect(last?.state).toBe('succeeded');
    }
  });
});

describe('history', () => {
  test('finished tasks of an earlier run are listed after a restart, with their result', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-history-'));
    try {
      headless = await startTestHeadless({ dir });
      const { id } = await headless.bridge.submit(demoRequest('progress', ['--steps=2', '--interval=10'], 'from the first run'));
      await waitForTask(headless.bridge.subscribe, (task) => task.id === id && task.state === 'succeeded');
      await headless.stop({ keep: true });

      headless = await startTestHeadless({ dir });
      const tasks = await headless.bridge.listTasks();
      const again = tasks.find((task) => task.id === id);
      expect(again).toMatchObject({ label: 'from the first run', state: 'succeeded' });
      expect(again?.result?.data).toMatchObject({ summary: 'did 2 steps' });
      const info = await headless.bridge.info();
      expect(info.recent[0]?.args).toEqual(['--mode=progress', '--steps=2', '--interval=10']);
    } finally {
      await headless?.stop({ keep: true });
      headless = undefined;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('removed', () => {
  test('a task evicted from history by the limit is announced as removed, so open panels drop it', { timeout: 150_000 }, async () => {
    const { broker } = makeBroker({ historyLimit: 1 });
    await broker.ready;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '/dev/null', flushIntervalMs: 10 });
    try {
      const events: BridgeEvent[] = [];
      bridge.subscribe((event) => events.push(event));
      const first = await bridge.submit({ command: fixture('quick.mjs') });
      // Generous: two real processes on a loaded machine (a busy suite run took over 15 s here).
      await waitFor(() => broker.get(first.id)?.state === 'succeeded', 'the first task to succeed', 60_000);
      const second = await bridge.submit({ command: fixture('quick.mjs') });
      await waitFor(() => events.some((event) => event.removed?.includes(first.id)), 'the first task to be removed', 60_000);
      expect(events.find((event) => event.removed)?.removed).toEqual([first.id]);
      expect(broker.get(first.id)).toBeUndefined();
      expect((await bridge.listTasks()).map((task) => task.id)).toEqual([second.id]);
    } finally {
      bridge.close();
    }
  });
});

describe('big results', () => {
  test('over the control endpoint and the panel HTTP bridge a 10 MB result is a summary in lists and events, and taskResult brings it whole', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-big-'));
    const control = path.join(dir, 'run', 'control.sock');
    headless = await startTestHeadless({ dir, control });
    const hub = connectHub(control);
    const http = createHttpBridge({
      origin: origin(headless),
      token: headless.url.split('token=')[1]!,
      fetch,
      EventSource: NodeEventSource,
    });
    try {
      const { id } = await hub.submit({ command: fixture('big-result.mjs'), input: { bytes: 10 * 1024 * 1024 } });
      const ended = await waitForTask(http.subscribe, (task) => task.id === id && task.state === 'succeeded');
      expect(ended.result).toBeUndefined();
      expect(ended.resultSummary?.bytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(JSON.stringify(ended).length).toBeLessThan(4096);
      const page = await hub.listTaskPage({});
      expect(page.tasks.map((task) => task.id)).toEqual([id]);
      expect(JSON.stringify(page).length).toBeLessThan(4096);
      for (const bridge of [hub, http]) {
        const whole = await bridge.taskResult(id);
        expect((whole?.data as { text: string }).text.length).toBe(10 * 1024 * 1024);
        expect(whole?.status).toBe('success');
      }
      await expect(hub.taskResult('no-such-task')).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      hub.close();
      await headless.stop();
      headless = undefined;
    }
  });
});

describe('info over a long history', () => {
  test('recent commands look through the newest pages only: a long history of one command line is not walked whole', async () => {
    const all = Array.from(
      { length: 20_000 },
      (_, i) =>
        ({
          id: `t-${String(i).padStart(6, '0')}`,
          command: 'node',
          args: ['same.mjs'],
          cwd: '/tmp',
          label: `task ${i}`,
          state: 'succeeded',
          createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        }) as unknown as TaskSnapshot,
    );
    const newest = [...all].reverse();
    let pages = 0;
    const broker = {
      tasks: () => [...all],
      get: (id: string) => all.find((task) => task.id === id),
      taskPage: ({ limit = 200, before }: { limit?: number; before?: string }) => {
        pages++;
        const start = before === undefined ? 0 : newest.findIndex((task) => task.id === before) + 1;
        const slice = newest.slice(start, start + limit);
        return { tasks: slice, total: all.length, ...(start + limit < all.length ? { next: slice.at(-1)!.id } : {}) };
      },
      on: () => () => {},
      paused: false,
    } as unknown as BrokerLike;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    const info = await bridge.info();
    expect(info.recent.map((request) => request.args)).toEqual([['same.mjs']]);
    expect(pages).toBeLessThanOrEqual(5);
    bridge.close();
  });

  test('recent commands come from the newest pages of tasks, not from a copy of every task', async () => {
    // 450 tasks, oldest first: the newest 250 run one command, the older ones nine others.
    const all = Array.from(
      { length: 450 },
      (_, i) =>
        ({
          id: `t-${String(i).padStart(4, '0')}`,
          command: 'node',
          args: [i >= 200 ? 'same.mjs' : `other-${i % 9}.mjs`],
          cwd: '/tmp',
          label: `task ${i}`,
          state: 'succeeded',
          createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        }) as unknown as TaskSnapshot,
    );
    let copiedAll = 0;
    let pages = 0;
    const broker = {
      tasks: () => (copiedAll++, [...all]),
      get: (id: string) => all.find((task) => task.id === id),
      taskPage: ({ limit = 200, before }: { limit?: number; before?: string }) => {
        pages++;
        const newest = [...all].reverse();
        const start = before === undefined ? 0 : newest.findIndex((task) => task.id === before) + 1;
        const slice = newest.slice(start, start + limit);
        return { tasks: slice, total: all.length, ...(start + limit < all.length ? { next: slice.at(-1)!.id } : {}) };
      },
      on: () => () => {},
      paused: false,
    } as unknown as BrokerLike;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    const info = await bridge.info();
    expect(info.recent).toEqual(distinctCommands([...all].reverse(), 8));
    expect(info.recent.map((request) => request.args?.[0])).toEqual([
      'same.mjs',
      'other-1.mjs',
      'other-0.mjs',
      'other-8.mjs',
      'other-7.mjs',
      'other-6.mjs',
      'other-5.mjs',
      'other-4.mjs',
    ]);
    expect(copiedAll).toBe(0);
    expect(pages).toBe(2);
  });
});

/** `broker` as the bridge sees it, counting the bridge's `get` calls (the broker's own reads are not counted). */
function countingGets(broker: BrokerLike): { like: BrokerLike; gets: () => number } {
  let gets = 0;
  const like = new Proxy(broker, {
    get(target, key) {
      if (key === 'get') return (id: string) => (gets++, target.get(id));
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { like, gets: () => gets };
}

/** Feeds `start`'s task into a list; resolves with the list once the `exited` update came. */
function collectFeed(start: (listener: (event: TaskFeedEvent) => void) => { stop(): void }): Promise<TaskFeedEvent[]> {
  return new Promise((resolve) => {
    const events: TaskFeedEvent[] = [];
    const feed = start((event) => {
      events.push(event);
      if (event.update?.kind === 'exited') {
        feed.stop();
        resolve(events);
      }
    });
  });
}

describe("one task's feed", () => {
  test('each update comes with the picture after it, taken from the update: the broker is not read back per update', async () => {
    const { broker } = makeBroker();
    const { like, gets } = countingGets(broker);
    const bridge = createBrokerBridge(like, { mode: 'headless', version: 'test', logPath: '' });
    let id = '';
    const events = await collectFeed((listener) => {
      const followed = bridge.submitAndFollow(demoRequest('progress', ['--steps=60', '--interval=1']), listener);
      id = followed.id;
      return followed;
    });
    bridge.close();
    const updates = events.filter((event) => event.update);
    expect(updates.filter((event) => event.update!.kind === 'partial').length).toBeGreaterThan(50);
    // Read once for the first picture at most (the submitted task's), never per update (was one per update).
    expect(gets()).toBeLessThanOrEqual(1);
    for (const { task, update } of updates) {
      expect(task.id).toBe(id);
      expect(task.state).toBe(update!.state);
      if (update!.kind === 'partial') expect(task.progress).toBe(update!.progress);
    }
    const ended = updates.find((event) => event.update!.kind === 'ended')!;
    expect(ended.task.result?.status).toBe('success');
    expect(ended.update!.payload).toBeUndefined();
  });

  test('watching a running task: one read for its first picture, then the pictures its updates carry', async () => {
    const { broker } = makeBroker();
    const { like, gets } = countingGets(broker);
    const bridge = createBrokerBridge(like, { mode: 'headless', version: 'test', logPath: '' });
    const handle = broker.submit(demoRequest('progress', ['--steps=40', '--interval=2']));
    await waitFor(() => broker.get(handle.id)?.state === 'running', 'the task runs');
    const events = await collectFeed((listener) => bridge.watch(handle.id, listener));
    bridge.close();
    expect(events[0]!.update).toBeUndefined();
    expect(events.filter((event) => event.update?.kind === 'partial').length).toBeGreaterThan(10);
    expect(gets()).toBe(1);
    expect(() => bridge.watch('no-such-task', () => {})).toThrow(/No task with id no-such-task/);
  });
});

describe('change calls', () => {
  test("are the coding kind's: a broker without one keeps no worktrees, and says so", async () => {
    const broker = { tasks: () => [], get: () => undefined, on: () => () => {}, paused: false } as unknown as BrokerLike;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    await expect(bridge.taskChange('t1')).rejects.toMatchObject({ code: 'not_found', message: 'This hub keeps no worktrees' });
    await expect(bridge.applyChanges(['t1'])).rejects.toMatchObject({ code: 'not_found' });
    expect(await bridge.listWorktrees()).toEqual([]);
    bridge.close();
  });

  test("a TaskBroker's coding kind answers them, its errors in the bridge's codes", async () => {
    const { broker } = makeBroker();
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' });
    expect(await bridge.listWorktrees()).toEqual(broker.coding.list());
    await expect(bridge.taskChange('nope')).rejects.toMatchObject({ code: 'not_found' });
    bridge.close();
  });
});
