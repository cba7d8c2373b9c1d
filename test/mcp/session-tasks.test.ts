/**
 * The tasks an MCP session started, followed by their own handles (`client.follow`), in memory: an MCP
 * server over the client of a real broker's hub side (`createInMemoryPair`), the SDK's client over the
 * SDK's in-memory transport. The panel's all-task stream is never opened; each handle stops when its
 * task ends, and every one when the session ends. `tasks/result` waits on the task's handle too, not
 * by polling the store.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { createInMemoryPair, type BackchannelClient } from '../../src/client/index.js';
import { createMcpServer, type BackchannelMcp } from '../../src/mcp/server.js';
import { createTestBroker, fixture, waitFor } from '../helpers/core.js';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

interface Session {
  client: BackchannelClient;
  mcp: BackchannelMcp;
  tools: Client;
  /** Every handle the server opened with `client.follow`, and whether it was stopped. */
  handles: Array<{ id: string; stopped: boolean }>;
  /** Calls of the panel's all-task stream, from the server's creation on. */
  subscribe: ReturnType<typeof vi.spyOn>;
}

async function session(): Promise<Session> {
  const { broker } = createTestBroker();
  const pair = createInMemoryPair(broker);
  const client = pair.client;
  const handles: Session['handles'] = [];
  const follow = client.follow.bind(client);
  client.follow = async (id) => {
    const run = await follow(id);
    const handle = { id, stopped: false };
    handles.push(handle);
    const stop = run.stop.bind(run);
    run.stop = () => {
      handle.stopped = true;
      stop();
    };
    return run;
  };
  const subscribe = vi.spyOn(client, 'subscribe');
  const mcp = createMcpServer(client, '0');
  const tools = new Client({ name: 'test', version: '0' }, { capabilities: { elicitation: {} } });
  tools.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'dev' } }));
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  await tools.connect(clientSide);
  closing.push(
    () => pair.close(),
    () => mcp.server.close(),
    () => tools.close(),
    async () => mcp.dispose(),
  );
  return { client, mcp, tools, handles, subscribe };
}

async function call(tools: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = await tools.callTool({ name, arguments: args }, CallToolResultSchema);
  return JSON.parse((result.content[0] as { text: string }).text);
}

describe("an MCP session's tasks", () => {
  test('are followed by their own handles: the question is elicited, the handle stops at the end, no all-task stream', async () => {
    const { tools, handles, subscribe } = await session();
    const { task_id } = await call(tools, 'start_task', { command: process.execPath, args: [fixture('asker.mjs')] });
    // wait_for_task keeps waiting while the session elicits the question; the elicitation's answer ends the task.
    expect(await call(tools, 'wait_for_task', { task_id })).toMatchObject({ state: 'succeeded', result: { answer: 'dev' } });
    await waitFor(() => handles.length > 0 && handles.every((handle) => handle.stopped), 'every handle to stop');
    expect(handles.map((handle) => handle.id)).toContain(task_id);
    expect(subscribe).not.toHaveBeenCalled();
  });

  test('that still run when the session ends have their handles stopped', async () => {
    const { client, mcp, tools, handles } = await session();
    const { task_id } = await call(tools, 'start_task', {
      command: process.execPath,
      args: [fixture('sleeper.mjs')],
      input: { ms: 60_000 },
    });
    await waitFor(() => handles.find((handle) => handle.id === task_id), 'the session to follow its task');
    expect(handles.every((handle) => !handle.stopped)).toBe(true);
    mcp.dispose();
    expect(handles.every((handle) => handle.stopped)).toBe(true);
    await client.cancel(task_id);
  });
});

describe('tasks/result', () => {
  function runTask(tools: Client, input: Record<string, unknown>) {
    const params = { name: 'run_task', arguments: { command: process.execPath, args: [fixture('sleeper.mjs')], input }, task: {} };
    return tools.request({ method: 'tools/call', params }, CreateTaskResultSchema);
  }

  test("waits on the task's own handle: no lookup of the task while it runs, the result once it ends", async () => {
    const { client, tools, handles } = await session();
    const { task } = await runTask(tools, { ms: 2_500 });
    const getTask = vi.spyOn(client, 'getTask');
    const result = await tools.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ task_id: task.taskId, state: 'succeeded' });
    // The SDK alone looked the task up three times per 500 ms poll (15 in 2.5 s); now before and after the wait.
    expect(getTask.mock.calls.length).toBeLessThanOrEqual(4);
    await waitFor(() => handles.every((handle) => handle.stopped), 'every handle to stop');
  });

  test('a cancel ends the wait with the cancelled result', async () => {
    const { tools, handles } = await session();
    const { task } = await runTask(tools, { ms: 60_000 });
    await waitFor(() => handles.length === 1, 'the session to follow its task');
    const result = tools.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    // The result's wait follows the task too: the cancel comes while it waits.
    await waitFor(() => handles.length === 2, 'the result to wait on the task');
    expect((await tools.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled');
    expect(await result).toMatchObject({ isError: true, structuredContent: { task_id: task.taskId } });
  });
  test("run_task's arguments are start_task's, parsed alike: input given as JSON text reaches the agent as an object", async () => {
    const { tools } = await session();
    const params = {
      name: 'run_task',
      arguments: { command: process.execPath, args: `["${fixture('quick.mjs')}"]`, input: '{"n":4}' },
      task: {},
    };
    const { task } = await tools.request({ method: 'tools/call', params }, CreateTaskResultSchema);
    const result = await tools.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ state: 'succeeded', result: { n: 4 } });
  });
});
