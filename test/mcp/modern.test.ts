/**
 * `backchannel mcp` to the official SDK v2 client pinned to MCP 2026-07-28, over stdio (real processes, a real hub):
 * server/discover and the tools, run_task to completion, a sub-agent's question as a multi-round-trip input request,
 * the Tasks extension (a task at once, tasks/get, tasks/update with the answer, tasks/cancel of the process tree),
 * task ids another `backchannel mcp` process answers for, and the extension's errors.
 */
import { describe, expect, test } from 'vitest';
import { fixture, waitFor, waitUntilGone } from '../helpers/core.js';
import { hubEnv, startHub } from '../hub/control/hub-process.js';
import { callTool, connectStdio, expectAbortedRunTaskCancelsTree, TASKS_EXTENSION } from './modern-client.js';
import { rawStdio, taskUntil, type RawClient, type Wire } from './raw-modern.js';

const TOOLS = [
  'answer_question',
  'apply_task_change',
  'cancel_task',
  'create_schedule',
  'discard_task_change',
  'get_task',
  'get_task_diff',
  'get_task_log',
  'list_schedules',
  'list_tasks',
  'run_task',
  'start_task',
  'wait_for_task',
];

/** `run_task` as a client of the Tasks extension sends it (the answer is a task, not a tool result). */
function runAsTask(client: RawClient, args: Record<string, unknown>): Promise<Wire> {
  return client.request('tools/call', { name: 'run_task', arguments: args });
}

function tasksRequest(client: RawClient, method: 'tasks/get' | 'tasks/update' | 'tasks/cancel', params: Wire): Promise<Wire> {
  return client.request(method, params);
}

/** The pids a tree-waiter reported, from a get_task result. */
function partialPids(result: Wire): number[] | undefined {
  return result.structuredContent?.last_partial?.pids as number[] | undefined;
}

describe('backchannel mcp over stdio, MCP 2026-07-28 (SDK v2 client, pinned)', () => {
  test('discover names 2026-07-28 and the Tasks extension; the 13 tools; run_task waits for its result', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connectStdio(hub);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    const done = await callTool(client, 'run_task', { command: process.execPath, args: [fixture('quick.mjs')], input: { n: 4 } });
    expect(done).toMatchObject({ isError: false, value: { state: 'succeeded', done: true, result: { n: 4 } } });
  });

  test("a sub-agent's question comes as an input request; the answer reaches the same task, which ends", async () => {
    const hub = hubEnv();
    await startHub(hub);
    const questions: string[] = [];
    const client = await connectStdio(hub, { elicit: (message) => (questions.push(message), 'dev') });
    const done = await callTool(client, 'run_task', { command: fixture('asker.mjs'), label: 'asks' });
    expect(done).toMatchObject({ isError: false, value: { state: 'succeeded', result: { answer: 'dev' } } });
    expect(questions).toEqual(['Sub-agent "asks" asks: Which branch should I use?']);
    // One task, not one per round.
    const listed = await callTool(client, 'list_tasks', {});
    expect(listed.value.tasks.filter((task: { label: string }) => task.label === 'asks')).toHaveLength(1);
  });

  test('cancelling a waiting run_task call (notifications/cancelled) cancels the task and its whole process tree', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connectStdio(hub);
    await expectAbortedRunTaskCancelsTree(client, { pids: 2 });
  });

  test('Tasks extension: run_task is a task at once; tasks/get until completed, inline result; another process answers for it', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = rawStdio(hub, { tasks: true });
    const created = await runAsTask(client, { command: fixture('sleeper.mjs'), input: { ms: 1_500 } });
    expect(created).toMatchObject({ resultType: 'task', status: 'working', ttlMs: null, pollIntervalMs: 500 });
    expect(typeof created.createdAt).toBe('string');
    const completed = await taskUntil(client, created.taskId, 'completed');
    expect(completed.resultType).toBe('complete');
    expect(completed.result).toMatchObject({ isError: false, structuredContent: { task_id: created.taskId, state: 'succeeded' } });
    // The task id is the durable Backchannel id: a new process answers for it.
    const other = rawStdio(hub, { tasks: true });
    expect(await tasksRequest(other, 'tasks/get', { taskId: created.taskId })).toMatchObject({ status: 'completed' });
  });

  test('Tasks extension: a question is input_required with inputRequests; tasks/update answers it', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = rawStdio(hub, { tasks: true });
    const created = await runAsTask(client, { command: fixture('asker.mjs'), label: 'asks' });
    const asking = await taskUntil(client, created.taskId, 'input_required');
    const [key, request] = Object.entries(asking.inputRequests as Record<string, Wire>)[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', message: 'Sub-agent "asks" asks: Which branch should I use?' },
    });
    expect(request.params.requestedSchema.properties.answer.enum).toEqual(['main', 'dev']);
    // A key that is not outstanding is ignored; the right one answers.
    expect(
      await tasksRequest(client, 'tasks/update', {
        taskId: created.taskId,
        inputResponses: { nope: { action: 'accept', content: { answer: 'dev' } } },
      }),
    ).toMatchObject({ resultType: 'complete' });
    await tasksRequest(client, 'tasks/update', {
      taskId: created.taskId,
      inputResponses: { [key]: { action: 'accept', content: { answer: 'main' } } },
    });
    const completed = await taskUntil(client, created.taskId, 'completed');
    expect(completed.result.structuredContent.result).toEqual({ answer: 'main' });
  });

  test('Tasks extension: tasks/cancel ends the sub-agent and its whole process tree', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = rawStdio(hub, { tasks: true });
    const created = await runAsTask(client, { command: fixture('tree-waiter.mjs') });
    const pids = await waitFor(
      async () => partialPids(await client.request('tools/call', { name: 'get_task', arguments: { task_id: created.taskId } })),
      'the pids',
    );
    expect(pids).toHaveLength(2);
    expect(await tasksRequest(client, 'tasks/cancel', { taskId: created.taskId })).toMatchObject({ resultType: 'complete' });
    await taskUntil(client, created.taskId, 'cancelled');
    await waitUntilGone(pids, 15_000);
  });

  test('the extension refuses an unknown task id (-32602) and a client that did not declare it (-32021)', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const declaring = rawStdio(hub, { tasks: true });
    await expect(tasksRequest(declaring, 'tasks/get', { taskId: 'no-such-task' })).rejects.toMatchObject({ code: -32602 });
    const plain = rawStdio(hub);
    const id = (await plain.request('tools/call', { name: 'start_task', arguments: { command: fixture('quick.mjs') } })).structuredContent
      .task_id as string;
    await expect(tasksRequest(plain, 'tasks/get', { taskId: id })).rejects.toMatchObject({ code: -32021 });
  });
});
