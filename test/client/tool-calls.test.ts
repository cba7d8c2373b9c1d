/**
 * A sub-agent calls tools its caller hosts, and the caller answers through the one client
 * (`TaskRun.answerToolCall`): the same cases in this process, over the in-memory pair, and on a real
 * hub over its control endpoint. The agents are real processes using the TypeScript SDK
 * (`task.callTool`, test/fixtures/tool-caller.mjs).
 */
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { TaskError } from '../../src/broker/errors.js';
import { BridgeError, type TaskRun } from '../../src/client/index.js';
import type { PendingToolCall, TaskUpdate, ToolDefinition } from '../../src/model/task.js';
import { fixture, settle, waitFor, waitUntilGone } from '../helpers/core.js';
import { clientBackends } from '../helpers/client-backends.js';

const node = process.execPath;
const READ: ToolDefinition = { name: 'Read', description: 'Reads a file', input_schema: { type: 'object' } };
const WRITE: ToolDefinition = { name: 'Write', input_schema: { type: 'object' } };

/** Each backend, over a fresh real broker closed after the test. */
const BACKENDS = clientBackends('bc-tc-hub-');

/** The calls the task waits on once `count` of them wait (from its own picture, as a front-end sees it). */
function waiting(task: TaskRun, count: number): Promise<PendingToolCall[]> {
  return waitFor(() => {
    const calls = task.snapshot().pendingToolCalls;
    return calls?.length === count ? calls : undefined;
  }, `${count} tool call(s) to wait`);
}

describe.each(BACKENDS)('tool calls through the client %s', (_name, open) => {
  test("the agent's calls reach the caller as updates and in the picture, and each answer reaches its own call", async () => {
    const client = await open();
    const calls = [
      { name: 'Read', arguments: { path: 'a.txt' } },
      { name: 'Write', arguments: { path: 'b.txt', content: 'B' } },
    ];
    const task = await client.run({ command: node, args: [fixture('tool-caller.mjs')], input: { calls }, tools: [READ, WRITE] });
    const updates: TaskUpdate[] = [];
    task.on('update', (update) => updates.push(update));
    const [read, write] = (await waiting(task, 2)) as [PendingToolCall, PendingToolCall];
    expect([read.name, read.arguments, write.name, write.arguments]).toEqual([
      'Read',
      { path: 'a.txt' },
      'Write',
      { path: 'b.txt', content: 'B' },
    ]);
    await waitFor(() => updates.filter((u) => u.kind === 'tool_call').length === 2, 'both tool_call updates');
    expect(updates.filter((u) => u.kind === 'tool_call').map((u) => u.toolCall?.name)).toEqual(['Read', 'Write']);

    await task.answerToolCall(write.callId, { error: 'permission denied' });
    await task.answerToolCall(read.callId, { content: 'text of a' });
    expect((await task.result).data).toEqual({
      offered: ['Read', 'Write'],
      results: [{ content: 'text of a' }, { error: 'tool call Write failed: permission denied' }],
    });
    expect(task.snapshot().pendingToolCalls).toBeUndefined();
    expect(updates.filter((u) => u.kind === 'tool_result').map((u) => u.toolCall?.callId)).toEqual([write.callId, read.callId]);
  });

  test('an answer to a call the task does not wait on is refused with a BridgeError; the call still waits', async () => {
    const client = await open();
    const task = await client.run({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read' }] },
      tools: [READ],
    });
    const [call] = (await waiting(task, 1)) as [PendingToolCall];
    await expect(task.answerToolCall('no-such-call', { content: 'x' })).rejects.toSatisfy(
      (error) => BridgeError.is(error) && error.code === 'conflict' && error.message.includes('"no-such-call"'),
    );
    await expect(task.answerToolCall(call.callId, { nothing: 1 } as never)).rejects.toMatchObject({ code: 'invalid_request' });
    expect(task.snapshot().pendingToolCalls).toHaveLength(1);
    await task.answerToolCall(call.callId, { content: 'once' });
    await expect(task.answerToolCall(call.callId, { content: 'twice' })).rejects.toMatchObject({ code: 'conflict' });
    expect((await task.result).data).toMatchObject({ results: [{ content: 'once' }] });
  });

  test('a 10 MB tool result reaches the agent whole', async () => {
    const client = await open();
    const task = await client.run({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read', arguments: { path: 'big.txt' } }], digest: true },
      tools: [READ],
    });
    const [call] = (await waiting(task, 1)) as [PendingToolCall];
    // Multi-byte characters throughout: a cut or re-encoded byte changes the digest.
    const content = 'été ✓ line\n'.repeat(1024 * 1024);
    await task.answerToolCall(call.callId, { content });
    const sha256 = createHash('sha256').update(content).digest('hex');
    expect((await task.result).data).toEqual({ offered: ['Read'], results: [{ content: { bytes: Buffer.byteLength(content), sha256 } }] });
  });

  test('cancel reaches a task waiting on a tool call, and leaves no process', async () => {
    const client = await open();
    const task = await client.run({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read' }] },
      tools: [READ],
    });
    const [call] = (await waiting(task, 1)) as [PendingToolCall];
    const pid = await waitFor(() => task.snapshot().pid, 'the pid');
    await client.cancel(task.id, 'the caller went away');
    const outcome = await settle(task.result);
    expect(!outcome.ok && TaskError.is(outcome.error) && outcome.error.reason).toBe('cancelled');
    await task.finished;
    await waitUntilGone([pid]);
    await expect(task.answerToolCall(call.callId, { content: 'late' })).rejects.toSatisfy(
      (error) => BridgeError.is(error) && (error.code === 'conflict' || error.code === 'not_found'),
    );
  });
});
