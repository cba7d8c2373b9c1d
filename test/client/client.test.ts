/**
 * The one client, the same behaviour on both of its live backends: a broker in this process
 * (`clientOf`) and the hub's side over the in-memory pair (`createInMemoryPair`: every call through
 * the route table and JSON, as over the control endpoint). Real brokers and real agent processes.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { TaskError } from '../../src/broker/errors.js';
import { BridgeError, clientOf, createInMemoryPair, NO_HUB, openClient, type BackchannelClient } from '../../src/client/index.js';
import { createTestBroker, fixture, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';

const node = process.execPath;

interface Opened {
  client: BackchannelClient;
}

/** Each backend, over a fresh real broker closed after the test. */
const BACKENDS: Array<[string, () => Opened]> = [
  [
    'in process',
    () => {
      const { broker } = createTestBroker();
      return { client: clientOf(broker) };
    },
  ],
  [
    'on the hub (in-memory pair)',
    () => {
      const { broker } = createTestBroker();
      return { client: createInMemoryPair(broker).client };
    },
  ],
];

describe.each(BACKENDS)('the client %s', (_name, open) => {
  test('run gives the result and every update in order', async () => {
    const { client } = open();
    const task = await client.run({ command: node, args: [fixture('quick.mjs')], input: { n: 7 } });
    const kinds: string[] = [];
    task.on('update', (update) => kinds.push(update.kind));
    expect((await task.result).data).toEqual({ n: 7 });
    await task.finished;
    expect(task.snapshot().state).toBe('succeeded');
    expect(kinds.at(-1)).toBe('exited');
    expect(kinds.indexOf('ended')).toBeLessThan(kinds.indexOf('exited'));
  });

  test('start returns the id at once, and follow gets the same task to its end', async () => {
    const { client } = open();
    const { id } = await client.start({ command: node, args: [fixture('quick.mjs')], input: { n: 3 } });
    const task = await client.follow(id);
    expect(task.id).toBe(id);
    expect((await task.result).data).toEqual({ n: 3 });
    expect((await client.getTask(id)).task.state).toBe('succeeded');
  });

  test("answer reaches the agent's question, through the handle", async () => {
    const { client } = open();
    const task = await client.run({ command: node, args: [fixture('asker.mjs')] });
    await waitFor(() => task.snapshot().pendingQuestion, 'the question');
    await task.answer(task.snapshot().pendingQuestion!.askId, 'dev');
    expect((await task.result).data).toEqual({ answer: 'dev' });
  });

  test('cancel by id ends a sleeping agent as cancelled, with no process left', async () => {
    const { client } = open();
    const task = await client.run({ command: node, args: [fixture('sleeper.mjs')], input: { ms: 60_000 } });
    const pid = await waitFor(() => task.snapshot().pid, 'the agent to run');
    await client.cancel(task.id, 'enough');
    const error = await task.result.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(TaskError.is(error) && error.reason).toBe('cancelled');
    await task.finished;
    await waitUntilGone([pid]);
  });

  test('retry runs an ended task again as a new task; resolveId takes a prefix', async () => {
    const { client } = open();
    const first = await client.run({ command: node, args: [fixture('quick.mjs')], input: { n: 1 } });
    await first.finished;
    const { id } = await client.retry(first.id);
    expect(id).not.toBe(first.id);
    expect((await (await client.follow(id)).result).data).toEqual({ n: 1 });
    expect(await client.resolveId(id.slice(0, 30))).toBe(id);
    // The short id printed for people (the UUID's random tail), with or without its branch's prefix.
    const short = id.replace(/-/g, '').slice(-12);
    expect(await client.resolveId(short)).toBe(id);
    expect(await client.resolveId(`backchannel/${short}`)).toBe(id);
  });

  test('refusals are BridgeErrors with a code from the one table', async () => {
    const { client } = open();
    const unknown = '00000000-0000-7000-8000-000000000000';
    await expect(client.getTask(unknown)).rejects.toMatchObject({ code: 'not_found' });
    await expect(client.resolveId('zzzz')).rejects.toMatchObject({ code: 'not_found', message: 'No task with an id starting with "zzzz"' });
    await expect(client.follow(unknown)).rejects.toSatisfy((error) => BridgeError.is(error) && error.code === 'not_found');
    await expect(client.taskChange(unknown)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('the in-memory pair', () => {
  test('closing the client cancels the task it started attached, as a closed connection does', async () => {
    const { broker } = createTestBroker();
    const pair = createInMemoryPair(broker);
    const task = await pair.client.run({ command: node, args: [fixture('sleeper.mjs')], input: { ms: 60_000 } });
    await waitFor(() => broker.get(task.id)?.state === 'running', 'the agent to run');
    await pair.close();
    await waitFor(() => broker.get(task.id)?.state === 'cancelled', 'the task to be cancelled');
    expect(broker.get(task.id)?.message).toContain('the front-end that started it went away');
  });

  test('a refused submission rejects with the check of the route table', async () => {
    const { broker } = createTestBroker();
    const { client } = createInMemoryPair(broker);
    await expect(client.submit({ command: '' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(client.run({ command: node, args: [fixture('quick.mjs')], timeoutMs: -1 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });
});

describe('openClient, the one hub-or-not decision', () => {
  /** An environment where no hub runs and the history is empty. */
  function noHub(): NodeJS.ProcessEnv {
    const dir = tempDir('bc-oc-');
    return { ...process.env, XDG_STATE_HOME: path.join(dir, 'state'), BACKCHANNEL_CONTROL: path.join(dir, 'control.sock') };
  }

  test('refuse: no hub is a one-line refusal', async () => {
    await expect(openClient({ withoutHub: 'refuse', env: noHub() })).rejects.toMatchObject({ code: 'conflict', message: NO_HUB });
  });

  test('history: the history on disk, read-only', async () => {
    const client = await openClient({ withoutHub: 'history', env: noHub() });
    try {
      expect(client.where.kind).toBe('history');
      expect(await client.listTasks()).toEqual([]);
      await expect(client.start({ command: node })).rejects.toMatchObject({ code: 'conflict' });
    } finally {
      await client.close();
    }
  });

  test('private: a broker of its own, closed with the client', async () => {
    const client = await openClient({ withoutHub: 'private', local: true, broker: { ipcDir: path.join(tempDir('bc-oc-'), 'ipc') } });
    try {
      expect(client.where.kind).toBe('local');
      const task = await client.run({ command: node, args: [fixture('quick.mjs')], input: { n: 5 }, origin: 'cli' });
      expect((await task.result).data).toEqual({ n: 5 });
    } finally {
      await client.close();
    }
  });

  test('local goes only with a private broker', async () => {
    await expect(openClient({ withoutHub: 'history', local: true })).rejects.toThrow('`local` goes with `withoutHub: "private"`');
  });
});

describe("a local broker's followed task", () => {
  test('takes each picture from its update: the broker is not read back per update', async () => {
    const { broker } = createTestBroker();
    let gets = 0;
    // The client's view of the broker, counting its `get` calls (the broker's own reads are not counted).
    const counted = new Proxy(broker, {
      get(target, key) {
        if (key === 'get') return (id: string) => (gets++, target.get(id));
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const client = clientOf(counted);
    const { id } = await client.start({
      command: process.execPath,
      args: [fixture('../../scripts/demo-agents/agent.mjs'), '--mode=progress', '--steps=40', '--interval=2'],
    });
    const task = await client.follow(id);
    const progress: Array<[number | undefined, number | undefined]> = [];
    task.on('update', (update) => progress.push([update.progress, task.snapshot().progress]));
    await task.finished;
    expect(progress.length).toBeGreaterThan(40);
    // The handle's picture is the one after each update.
    for (const [sent, shown] of progress) expect(shown).toBe(sent);
    expect(gets).toBeLessThanOrEqual(1);
    await client.close();
  });
});
