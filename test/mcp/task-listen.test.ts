/**
 * Task status notifications of the MCP Tasks extension through `subscriptions/listen` (src/mcp/task-listen.ts): the
 * official SDK v2 client pinned to 2026-07-28, over stdio (`backchannel mcp`) and over HTTP (`backchannel serve`),
 * starts a task, listens for it, and sees `notifications/tasks` in order up to its end — `input_required` with the
 * question for a sub-agent that asks, `cancelled` for a cancelled one — then the server's graceful close; the
 * client's own close ends the stream; a client without the extension is refused with -32021. In memory: a
 * cancelled subscription stops every task handle it held.
 */
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { describe, expect, test } from 'vitest';
import { createInMemoryPair, type BackchannelClient, type TaskRun } from '../../src/client/index.js';
import { TaskListens, type ListenMessage } from '../../src/mcp/task-listen.js';
import { fixture, makeBroker, waitFor, waitUntilGone } from '../helpers/core.js';
import { hubEnv, printed, start, startHub } from '../hub/control/hub-process.js';
import { callTool, connectHttp, connectStdio, TASKS_EXTENSION } from './modern-client.js';

type Wire = Record<string, any>;

interface Listening {
  honored: Wire;
  /** Every `notifications/tasks` received, in order. */
  notes: Wire[];
  /** How the subscription ended: 'graceful' (the server's result), 'local' (closed here) or 'remote'. */
  closed: Promise<unknown>;
  close(): Promise<void>;
}

const tapped = new WeakMap<Client, Wire[]>();

/** Every message the client's transport received (the SDK's codec keeps only the core fields of an acknowledgement). */
function inbound(client: Client): Wire[] {
  let messages = tapped.get(client);
  if (messages) return messages;
  const seen: Wire[] = [];
  const transport = client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    seen.push(message as Wire);
    deliver(message, extra);
  };
  tapped.set(client, (messages = seen));
  return messages;
}

/**
 * Opens a listen for `taskIds` (the SDK's filter type lacks the extension's field; the client sends it as given);
 * `honored` is the filter of the acknowledgement as it came over the wire.
 */
async function listenFor(client: Client, taskIds: string[]): Promise<Listening> {
  const notes: Wire[] = [];
  const wire = inbound(client);
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method === 'notifications/tasks') notes.push(notification.params as Wire);
  };
  const from = wire.length;
  const subscription = await client.listen({ taskIds } as never);
  const ack = wire.slice(from).find((message) => message.method === 'notifications/subscriptions/acknowledged')!;
  return { honored: ack.params.notifications as Wire, notes, closed: subscription.closed, close: () => subscription.close() };
}

/** The statuses notified, each run of one status once. */
function statuses(notes: Wire[]): string[] {
  return notes.map((note) => note.status as string).filter((status, i, all) => status !== all[i - 1]);
}

async function startTask(client: Client, args: Record<string, unknown>): Promise<string> {
  const started = await callTool(client, 'start_task', args);
  expect(started.isError).toBe(false);
  return started.value.task_id as string;
}

/** A question notified, answered with answer_question; then the task runs to completed and the server ends the stream. */
async function expectQuestionToCompletion(client: Client): Promise<void> {
  const id = await startTask(client, { command: fixture('asker.mjs'), label: 'asks' });
  const listening = await listenFor(client, [id]);
  expect(listening.honored).toEqual({ taskIds: [id] });
  const asking = await waitFor(() => listening.notes.find((note) => note.status === 'input_required'), 'input_required');
  expect(asking).toMatchObject({ taskId: id, pollIntervalMs: 500, ttlMs: null });
  const [request] = Object.values(asking.inputRequests as Record<string, Wire>);
  expect(request).toMatchObject({ method: 'elicitation/create', params: { message: 'Sub-agent "asks" asks: Which branch should I use?' } });
  expect(asking._meta).toEqual({ 'io.modelcontextprotocol/subscriptionId': expect.any(String) });
  expect((await callTool(client, 'answer_question', { task_id: id, answer: 'dev' })).isError).toBe(false);
  expect(await listening.closed).toBe('graceful');
  const seen = statuses(listening.notes);
  // The first notification is the task's status when the listen began (working, or asking already).
  expect(seen.slice(seen.indexOf('input_required'))).toEqual(
    seen.includes('working', seen.indexOf('input_required')) ? ['input_required', 'working', 'completed'] : ['input_required', 'completed'],
  );
  expect(seen.slice(0, seen.indexOf('input_required')).every((status) => status === 'working')).toBe(true);
  const completed = listening.notes.at(-1)!;
  expect(completed).toMatchObject({
    taskId: id,
    status: 'completed',
    result: { isError: false, structuredContent: { result: { answer: 'dev' } } },
  });
}

/** A tree-waiter cancelled (cancel_task): `cancelled` is notified last, the stream ends, no process is left. */
async function expectCancelledToEnd(client: Client): Promise<void> {
  const id = await startTask(client, { command: fixture('tree-waiter.mjs') });
  const listening = await listenFor(client, [id]);
  const pids = await waitFor(
    async () => (await callTool(client, 'get_task', { task_id: id })).value.last_partial?.pids as number[] | undefined,
    'the pids',
  );
  expect((await callTool(client, 'cancel_task', { task_id: id })).isError).toBe(false);
  expect(await listening.closed).toBe('graceful');
  expect(statuses(listening.notes)).toEqual(['working', 'cancelled']);
  await waitUntilGone(pids, 15_000);
}

describe('task status notifications through subscriptions/listen, over stdio (SDK v2 client, 2026-07-28)', () => {
  test("a sub-agent's question is notified as input_required, then completed with the result; the server ends the stream", async () => {
    const hub = hubEnv();
    await startHub(hub);
    await expectQuestionToCompletion(await connectStdio(hub, { tasks: true }));
  });

  test('a cancelled task is notified cancelled and its process tree is gone', async () => {
    const hub = hubEnv();
    await startHub(hub);
    await expectCancelledToEnd(await connectStdio(hub, { tasks: true }));
  });

  test("the client's close ends the subscription: nothing more arrives, the connection goes on", async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connectStdio(hub, { tasks: true });
    const id = await startTask(client, { command: fixture('asker.mjs'), label: 'asks' });
    const listening = await listenFor(client, [id]);
    await waitFor(() => listening.notes.find((note) => note.status === 'input_required'), 'input_required');
    await listening.close();
    expect(await listening.closed).toBe('local');
    const count = listening.notes.length;
    await callTool(client, 'answer_question', { task_id: id, answer: 'main' });
    // Waiting for the end through another route: the closed subscription got none of it.
    await waitFor(async () => (await callTool(client, 'get_task', { task_id: id })).value.state === 'succeeded', 'the task to end');
    const again = await listenFor(client, [id]);
    expect(await again.closed).toBe('graceful');
    expect(listening.notes).toHaveLength(count);
    // A listen after the end gets the task's last status, once, then the close.
    expect(statuses(again.notes)).toEqual(['completed']);
  });

  test('unknown task ids are not acknowledged; a client without the Tasks extension is refused with -32021', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const declaring = await connectStdio(hub, { tasks: true });
    const unknown = await listenFor(declaring, ['no-such-task']);
    expect(unknown.honored).toEqual({ taskIds: [] });
    expect(await unknown.closed).toBe('graceful');
    const plain = await connectStdio(hub);
    await expect(plain.listen({ taskIds: ['no-such-task'] } as never)).rejects.toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });
});

describe('task status notifications through subscriptions/listen, over HTTP (SDK v2 client, 2026-07-28)', () => {
  async function startMcpHub(): Promise<{ url: string; headers: Record<string, string> }> {
    const hub = hubEnv();
    const proc = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
    await printed(proc, /(Press Ctrl\+C)/, 'serve to start');
    const url = await printed(proc, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
    const token = await printed(proc, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
    return { url, headers: { Authorization: `Bearer ${token}` } };
  }

  test("a sub-agent's question is notified as input_required, then completed with the result; the server ends the stream", async () => {
    const { url, headers } = await startMcpHub();
    await expectQuestionToCompletion(await connectHttp(url, { tasks: true, headers }));
  });

  test('a cancelled task is notified cancelled and its process tree is gone', async () => {
    const { url, headers } = await startMcpHub();
    await expectCancelledToEnd(await connectHttp(url, { tasks: true, headers }));
  });

  test('a client without the Tasks extension is refused with -32021', async () => {
    const { url, headers } = await startMcpHub();
    const plain = await connectHttp(url, { headers });
    await expect(plain.listen({ taskIds: ['no-such-task'] } as never)).rejects.toMatchObject({ code: -32021 });
  });
});

describe('TaskListens (in memory)', () => {
  test('a subscription cancelled by notifications/cancelled stops every task handle it held', async () => {
    const { broker } = makeBroker();
    const { client } = createInMemoryPair(broker);
    const live = new Set<TaskRun>();
    const counting: Pick<BackchannelClient, 'follow' | 'taskResult'> = {
      taskResult: (id) => client.taskResult(id),
      async follow(id) {
        const run = await client.follow(id);
        live.add(run);
        const stop = run.stop.bind(run);
        run.stop = () => (live.delete(run), stop());
        return run;
      },
    };
    const listens = new TaskListens(counting, { name: 'backchannel', version: 'test' });
    const sleepers = [0, 1].map(() => broker.submit({ command: fixture('sleeper.mjs'), input: { ms: 60_000 } }));
    const sent: ListenMessage[] = [];
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
    };
    const listen = {
      jsonrpc: '2.0',
      id: 'listen:0',
      method: 'subscriptions/listen',
      params: { notifications: { taskIds: sleepers.map((s) => s.id) }, _meta: meta },
    };
    expect(listens.take(listen, () => ({ send: (m) => sent.push(m), end: () => {} }))).toBe(true);
    await waitFor(() => sent.filter((m) => 'method' in m && m.method === 'notifications/tasks').length === 2, 'both tasks notified');
    expect(live.size).toBe(2);
    expect(
      listens.take({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'listen:0' } }, () => ({
        send: () => {},
        end: () => {},
      })),
    ).toBe(true);
    expect(live.size).toBe(0);
    expect(listens.size).toBe(0);
    // Not ours: the SDK's to serve.
    expect(
      listens.take({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }, () => ({
        send: () => {},
        end: () => {},
      })),
    ).toBe(false);
    for (const sleeper of sleepers) sleeper.cancel();
    await broker.close();
  });
});
