/**
 * `backchannel mcp` against the points of the MCP specification 2025-11-25 (Tasks, tools) a strict client
 * checks, with the official SDK client over stdio to a real process on a real hub: tasks/list pages
 * with opaque cursors, a task-augmented call of a tool without task support is refused before it runs,
 * an elicitation inside a task names its task, lastUpdatedAt and ttl, notifications/tasks/status,
 * typed tool arguments, get_task_log's structured result, and a cancelled plain run_task call.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ListTasksResultSchema,
  McpError,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, test } from 'vitest';
import { fixture, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { TASKS_PAGE_SIZE } from '../../src/mcp/task-store.js';
import { call, connect } from './mcp-client.js';

/** The tasks the hub has, newest first (from the terminal). */
async function hubTasks(hub: HubEnv): Promise<Array<{ id: string; label: string; state: string }>> {
  return JSON.parse((await cli(['tasks', '--json', '--limit', '1000'], hub.env)).stdout) as Array<{
    id: string;
    label: string;
    state: string;
  }>;
}

/** The JSON-RPC error a request fails with. */
async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

function runTask(client: Client, args: Record<string, unknown>, task: Record<string, unknown> = {}) {
  return client.request({ method: 'tools/call', params: { name: 'run_task', arguments: args, task } }, CreateTaskResultSchema);
}

describe('backchannel mcp, exact to the MCP specification 2025-11-25', () => {
  test('tasks/list pages with opaque cursors; an unknown or mistyped cursor is -32602 in one line', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const started = await Promise.all(
      Array.from(
        { length: TASKS_PAGE_SIZE + 1 },
        async (_, n) => (await call(client, 'start_task', { command: fixture('quick.mjs'), input: { n } })).value.task_id as string,
      ),
    );
    const first = await client.experimental.tasks.listTasks();
    expect(first.tasks).toHaveLength(TASKS_PAGE_SIZE);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await client.experimental.tasks.listTasks(first.nextCursor);
    expect(second.nextCursor).toBeUndefined();
    const listed = [...first.tasks, ...second.tasks].map((task) => task.taskId);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual([...started].sort());

    for (const cursor of ['not-a-real-cursor', 5, { page: 2 }]) {
      const error = await rpcError(client.request({ method: 'tasks/list', params: { cursor } } as never, ListTasksResultSchema));
      expect(error.code, String(cursor)).toBe(-32602);
      expect(error.message).not.toContain('\n');
      expect(error.message).toMatch(/cursor/i);
    }
  });

  test('a task-augmented call of a tool without task support is refused with -32601 before anything runs', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const tools = (await client.listTools()).tools;
    expect(tools.find((tool) => tool.name === 'start_task')?.execution?.taskSupport).toBe('forbidden');
    const refused = await rpcError(
      client.request(
        {
          method: 'tools/call',
          params: { name: 'start_task', arguments: { command: fixture('quick.mjs'), label: 'must not run' }, task: {} },
        },
        CreateTaskResultSchema,
      ),
    );
    expect(refused.code).toBe(-32601);
    expect(refused.message).toBe(
      'MCP error -32601: Tool start_task does not support task-augmented calls (its execution.taskSupport is "forbidden"): ' +
        'call it without "task", or use run_task',
    );
    // A task-augmented run_task whose arguments are wrong creates no task either, and says why in one line.
    const invalid = await rpcError(runTask(client, { command: fixture('quick.mjs'), input: 'not json', label: 'must not run' }));
    expect(invalid.code).toBe(-32602);
    expect(invalid.message).toMatch(/^MCP error -32602: Invalid arguments for tool run_task: must be a JSON object, e\.g\. .* at input$/);
    const noStart = await rpcError(runTask(client, { label: 'must not run' }));
    expect(noStart).toMatchObject({ code: -32602, message: expect.stringContaining('Give either `preset`') });
    // The hub ran nothing.
    expect(await hubTasks(hub)).toEqual([]);
  });

  test('inside a task: the elicitation names its task; status notifications on every change; lastUpdatedAt moves; ttl as asked', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const elicited: unknown[] = [];
    const client = await connect(hub, { elicit: (_question, request) => (elicited.push(request.params._meta), 'dev') });
    const notified: Task[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => void notified.push(notification.params as Task));

    const created = await runTask(client, { command: fixture('asker.mjs') }, { ttl: 60_000 });
    const taskId = created.task.taskId;
    expect(created.task).toMatchObject({ ttl: 60_000 });
    const done = await waitFor(
      async () => {
        const task = await client.experimental.tasks.getTask(taskId);
        return task.status === 'completed' ? task : undefined;
      },
      'the task to complete',
      30_000,
      100,
    );
    expect(done.ttl).toBe(60_000);
    expect(new Date(done.lastUpdatedAt).getTime()).toBeGreaterThan(new Date(done.createdAt).getTime());
    expect(elicited).toEqual([{ [RELATED_TASK_META_KEY]: { taskId } }]);
    await waitFor(() => notified.some((task) => task.status === 'completed'), 'the completed notification', 15_000, 50);
    const statuses = notified.map((task) => task.status);
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    statuses.forEach((status, n) => expect(status, statuses.join(' → ')).not.toBe(statuses[n - 1]));
    for (const task of notified) {
      expect(task).toMatchObject({ taskId, ttl: 60_000, createdAt: created.task.createdAt });
      expect(new Date(task.lastUpdatedAt).getTime()).toBeGreaterThan(new Date(task.createdAt).getTime());
    }
    const times = notified.map((task) => new Date(task.lastUpdatedAt).getTime());
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ state: 'succeeded', result: { answer: 'dev' } });
  });

  test('input_required moves lastUpdatedAt; a task created without a ttl reports null (unlimited), never a missing ttl', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const created = await runTask(client, { command: fixture('asker.mjs') });
    expect(created.task.ttl).toBeNull();
    const asking = await waitFor(
      async () => {
        const task = await client.experimental.tasks.getTask(created.task.taskId);
        return task.status === 'input_required' ? task : undefined;
      },
      'the question',
      30_000,
      100,
    );
    expect(asking.ttl).toBeNull();
    // The status moved (working → input_required), so lastUpdatedAt did: to when the question was asked.
    expect(Date.parse(asking.lastUpdatedAt)).toBeGreaterThan(Date.parse(created.task.lastUpdatedAt));
    expect((await cli(['answer', created.task.taskId, 'main'], hub.env)).code).toBe(0);
    const working = await waitFor(
      async () => {
        const task = await client.experimental.tasks.getTask(created.task.taskId);
        return task.status !== 'input_required' ? task : undefined;
      },
      'the answer',
      30_000,
      100,
    );
    expect(new Date(working.lastUpdatedAt).getTime()).toBeGreaterThanOrEqual(new Date(asking.lastUpdatedAt).getTime());
  });

  test('every tool argument has a JSON-Schema type; input given as JSON text is parsed, other text refused', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    for (const tool of (await client.listTools()).tools) {
      expect(tool.inputSchema.type).toBe('object');
      for (const [name, property] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((property as { type?: unknown }).type, `${tool.name}.${name}`).toEqual(expect.any(String));
      }
    }
    const started = await call(client, 'start_task', { command: fixture('sdk-progress.mjs'), input: '{"path":"."}', args: '[]' });
    const waited = await call(client, 'wait_for_task', { task_id: started.value.task_id, timeout_seconds: 30 });
    expect(waited.value.result.echo).toEqual({ path: '.' });
    const refused = await call(client, 'start_task', { command: fixture('sdk-progress.mjs'), input: 'path=.' });
    expect(refused.isError).toBe(true);
    expect(String(refused.value)).toMatch(/Invalid arguments for tool start_task: must be a JSON object, e\.g\. .* at input$/);
    const asArray = await call(client, 'start_task', { command: fixture('sdk-progress.mjs'), input: '[1, 2]' });
    expect(asArray.isError).toBe(true);
    expect((await hubTasks(hub)).map((task) => task.id)).toEqual([started.value.task_id]);
  });

  test('get_task_log returns its lines as JSON, in text and structuredContent', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const id = (await call(client, 'start_task', { command: fixture('crash.mjs') })).value.task_id as string;
    await call(client, 'wait_for_task', { task_id: id, timeout_seconds: 30 });
    const log = await call(client, 'get_task_log', { task_id: id, lines: 60 });
    expect(log.structured).toEqual(log.value);
    expect(log.value).toMatchObject({
      task_id: id,
      lines: expect.arrayContaining([expect.objectContaining({ stream: 'stderr', text: 'working on item 30' })]),
    });
  });

  test('cancelling a plain run_task call (notifications/cancelled) cancels its sub-agent', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const abort = new AbortController();
    const running = call(client, 'run_task', { command: fixture('cancellable.mjs'), label: 'plain run' }, { signal: abort.signal });
    const task = await waitFor(
      async () => (await hubTasks(hub)).find((t) => t.label === 'plain run' && t.state === 'running'),
      'it to run',
      30_000,
      100,
    );
    abort.abort('the person changed their mind');
    await expect(running).rejects.toThrow();
    await waitFor(
      async () => (await hubTasks(hub)).find((t) => t.id === task.id && t.state === 'cancelled'),
      'the hub to cancel it',
      30_000,
      100,
    );
  });
});
