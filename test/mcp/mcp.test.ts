/**
 * `backchannel mcp` driven by the official MCP SDK client over stdio (real processes): the tools
 * (start, wait, cancel, answer, log), elicitation of a sub-agent's question, MCP Tasks (task handle,
 * tasks/get until terminal, tasks/result, tasks/cancel), a client that reconnects to another mcp
 * process before the result is ready, and a hub killed under a waiting call.
 */
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, test } from 'vitest';
import { fixture, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';
import { call, connect } from './mcp-client.js';

describe('backchannel mcp (SDK client over stdio)', () => {
  test('lists its tools; starts a sub-agent and waits for it; cancels another; answers a question; reads a log', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual([
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
    ]);

    const started = await call(client, 'start_task', { command: fixture('sdk-progress.mjs'), input: { q: 'hi' }, label: 'from mcp' });
    const id = started.value.task_id as string;
    const waited = await call(client, 'wait_for_task', { task_id: id, timeout_seconds: 30 });
    expect(waited).toMatchObject({ isError: false, value: { state: 'succeeded', done: true, result: { echo: { q: 'hi' } } } });
    // The hub ran it: the terminal sees the same task.
    expect((await cli(['tasks'], hub.env)).stdout).toContain(id);

    const slow = (await call(client, 'start_task', { command: fixture('cancellable.mjs') })).value.task_id as string;
    await waitFor(async () => (await call(client, 'get_task', { task_id: slow })).value.progress === 1, 'it to run');
    expect((await call(client, 'cancel_task', { task_id: slow.slice(0, 20) })).value).toEqual({ task_id: slow, cancelling: true });
    const cancelled = await call(client, 'wait_for_task', { task_id: slow, timeout_seconds: 30 });
    expect(cancelled).toMatchObject({ isError: true, value: { state: 'cancelled', failure: { reason: 'cancelled' } } });

    const asker = (await call(client, 'start_task', { command: fixture('asker.mjs') })).value.task_id as string;
    const asked = await call(client, 'wait_for_task', { task_id: asker, timeout_seconds: 30 });
    expect(asked.value).toMatchObject({ done: false, question: { question: 'Which branch should I use?', choices: ['main', 'dev'] } });
    await call(client, 'answer_question', { task_id: asker, answer: 'main' });
    expect((await call(client, 'wait_for_task', { task_id: asker })).value.result).toEqual({ answer: 'main' });

    const crash = (await call(client, 'start_task', { command: fixture('crash.mjs') })).value.task_id as string;
    expect((await call(client, 'wait_for_task', { task_id: crash })).value.failure.reason).toBe('crashed');
    const log = (await call(client, 'get_task_log', { task_id: crash, lines: 60 })).value;
    expect(log.task_id).toBe(crash);
    expect(log.lines.map((line: { text: string }) => line.text)).toContain('working on item 30');
    expect((await call(client, 'get_task', { task_id: 'no-such-task' })).isError).toBe(true);
  });

  test('a sub-agent question goes to a client that supports elicitation, and its answer comes back', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const questions: string[] = [];
    const client = await connect(hub, { elicit: (message) => (questions.push(message), 'dev') });
    const id = (await call(client, 'start_task', { command: fixture('asker.mjs'), label: 'asks' })).value.task_id as string;
    expect((await call(client, 'wait_for_task', { task_id: id, timeout_seconds: 30 })).value.result).toEqual({ answer: 'dev' });
    expect(questions).toEqual(['Sub-agent "asks" asks: Which branch should I use?']);
  });

  test('MCP Tasks: a task-augmented call returns a handle; tasks/get until terminal, tasks/result, tasks/cancel', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await connect(hub);
    const created = await client.request(
      {
        method: 'tools/call',
        params: { name: 'run_task', arguments: { command: fixture('sdk-progress.mjs'), input: { n: 5 } }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(created.task.status).toBe('working');
    const done = await waitFor(async () => {
      const task = await client.experimental.tasks.getTask(taskId);
      return task.status === 'completed' ? task : undefined;
    }, 'the task to complete');
    expect(done.taskId).toBe(taskId);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ task_id: taskId, state: 'succeeded', result: { echo: { n: 5 } } });

    const slow = await client.request(
      { method: 'tools/call', params: { name: 'run_task', arguments: { command: fixture('cancellable.mjs') }, task: {} } },
      CreateTaskResultSchema,
    );
    await waitFor(async () => (await client.experimental.tasks.getTask(slow.task.taskId)).statusMessage?.startsWith('1%'), 'it to run');
    expect((await client.experimental.tasks.cancelTask(slow.task.taskId)).status).toBe('cancelled');
    await waitFor(
      async () => (await cli(['show', '--json', slow.task.taskId], hub.env)).stdout.includes('"state":"cancelled"'),
      'the hub to end it',
    );
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toEqual(expect.arrayContaining([taskId, slow.task.taskId]));

    // Without task augmentation, run_task waits and returns the result itself.
    const plain = await call(client, 'run_task', { command: fixture('sdk-progress.mjs'), input: { plain: true } });
    expect(plain.value).toMatchObject({ state: 'succeeded', result: { echo: { plain: true } } });
  });

  test('a client that disconnects and reconnects (to a new mcp process) before the result is ready still gets it', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const first = await connect(hub);
    // The sub-agent waits for an answer, so its result cannot be ready before the second client is there.
    const created = await first.request(
      { method: 'tools/call', params: { name: 'run_task', arguments: { command: fixture('asker.mjs') }, task: {} } },
      CreateTaskResultSchema,
    );
    await first.close();
    const second = await connect(hub);
    const taskId = created.task.taskId;
    const waiting = await waitFor(async () => {
      const task = await second.experimental.tasks.getTask(taskId);
      return task.status === 'input_required' ? task : undefined;
    }, 'the question');
    expect(waiting.statusMessage).toBe('The sub-agent asks: Which branch should I use?');
    const result = second.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 30_000 });
    expect((await cli(['answer', taskId, 'main'], hub.env)).code).toBe(0);
    // tasks/result blocked until the task was terminal.
    expect((await result).structuredContent).toMatchObject({ state: 'succeeded', result: { answer: 'main' } });
  });

  test('a hub killed under wait_for_task: the call fails at once with a clear message, no hang', async () => {
    const hub = hubEnv();
    const running = await startHub(hub);
    const client = await connect(hub);
    const id = (await call(client, 'start_task', { command: fixture('cancellable.mjs') })).value.task_id as string;
    const waiting = call(client, 'wait_for_task', { task_id: id, timeout_seconds: 300 });
    await waitFor(async () => (await cli(['show', '--json', id], hub.env)).stdout.includes('"progress":1'), 'it to run');
    running.child.kill('SIGKILL');
    const started = Date.now();
    const failed = await waiting;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(failed.isError).toBe(true);
    expect(String(failed.value)).toMatch(/The Backchannel hub \(control endpoint .*\) is gone/);
  });

  test('without a hub, mcp runs its own broker and serves the control endpoint, so the terminal sees its tasks', async () => {
    const hub = hubEnv();
    const client = await connect(hub);
    const id = (await call(client, 'start_task', { command: fixture('sdk-progress.mjs') })).value.task_id as string;
    expect((await call(client, 'wait_for_task', { task_id: id })).value.state).toBe('succeeded');
    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/state\s+succeeded/);
  });
});
