/**
 * Tool calls (docs/protocol.md §7): an agent calls a tool its caller hosts and waits for the answer.
 * First the attempt's part over an in-memory endpoint (the offer in the welcome, the watchdog that
 * leaves a waiting agent alone), then the broker's with real agent processes: pending calls in the
 * snapshot and the updates, answers and errors, refusals, the watchdog, cancel while waiting.
 */
import { describe, expect, test, vi } from 'vitest';
import { Attempt } from '../../src/broker/task/attempt.js';
import { PROTOCOL_VERSION } from '../../src/protocol/index.js';
import type { TaskUpdate, ToolDefinition } from '../../src/model/task.js';
import { ARGUMENTS_PREVIEW_CHARS, MAX_SNAPSHOT_ARGUMENTS_CHARS } from '../../src/model/tools.js';
import { TaskError } from '../../src/broker/errors.js';
import { createTestBroker, fixture, leftovers, settle, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { fakeWorld, settings, TASK_ID } from './in-memory.js';

const node = process.execPath;

const READ: ToolDefinition = {
  name: 'Read',
  description: 'Reads a file',
  input_schema: { type: 'object', properties: { path: { type: 'string' } } },
};
const WRITE: ToolDefinition = { name: 'Write', input_schema: { type: 'object' } };

async function started(overrides: Parameters<typeof settings>[0] = {}) {
  const world = fakeWorld();
  const attempt = new Attempt(settings(overrides), world.sink, world.io);
  await attempt.start();
  return { attempt, ...world, endpoint: world.recorded.endpoint!, child: world.recorded.child! };
}

describe('an attempt with tools (in memory)', () => {
  test('the welcome offers the tools; a task without tools gets a welcome without the field', async () => {
    const { endpoint } = await started({ tools: [READ] });
    expect(endpoint.handlers.greeting()[0]).toEqual({
      type: 'welcome',
      task_id: TASK_ID,
      attempt: 1,
      protocol: PROTOCOL_VERSION,
      heartbeat_timeout_ms: 0,
      tools: [READ],
    });
    const plain = await started();
    expect(plain.endpoint.handlers.greeting()[0]).not.toHaveProperty('tools');
  });

  test('the stall watchdog leaves an agent waiting on a tool call alone, and watches it again after the result', async () => {
    vi.useFakeTimers();
    try {
      const { attempt, endpoint, recorded, child } = await started({ heartbeatTimeoutMs: 40, tools: [READ] });
      let decided = false;
      void attempt.outcome.then(() => (decided = true));
      endpoint.agentCallsTool({ type: 'tool_call', task_id: TASK_ID, call_id: 'c1', name: 'Read', arguments: { path: 'a' } });
      expect(recorded.toolCalls.map((c) => c.message.call_id)).toEqual(['c1']);
      // Ten heartbeat periods of silence while the caller runs its tool: not a stall.
      await vi.advanceTimersByTimeAsync(400);
      expect(decided).toBe(false);
      recorded.toolCalls[0]!.reply({ type: 'tool_result', task_id: TASK_ID, call_id: 'c1', content: 'text of a' });
      expect(endpoint.sent.at(-1)).toEqual({ type: 'tool_result', task_id: TASK_ID, call_id: 'c1', content: 'text of a' });
      // The result re-armed the watchdog: silence from now on is a stall again.
      await vi.advanceTimersByTimeAsync(30);
      expect(decided).toBe(false);
      await vi.advanceTimersByTimeAsync(20);
      expect(decided).toBe(true);
      expect((await attempt.outcome).kind === 'failure' && ((await attempt.outcome) as { reason: string }).reason).toBe('stalled');
      child.exit(null, 'SIGTERM');
      await vi.advanceTimersByTimeAsync(100);
      await attempt.finished;
    } finally {
      vi.useRealTimers();
    }
  });

  test('a tool call that arrives after the attempt was decided is refused at once, not passed on', async () => {
    const { attempt, endpoint, recorded, child } = await started({ tools: [READ] });
    attempt.stop('cancelled', 'enough');
    endpoint.agentCallsTool({ type: 'tool_call', task_id: TASK_ID, call_id: 'late', name: 'Read', arguments: {} });
    expect(recorded.toolCalls).toEqual([]);
    expect(endpoint.sent.at(-1)).toEqual({ type: 'tool_result', task_id: TASK_ID, call_id: 'late', error: 'the task has ended' });
    child.exit(null, 'SIGTERM');
    await attempt.finished;
  });
});

describe('the broker with tools (real agents)', () => {
  test('parallel calls wait in the snapshot and the updates, and each answer reaches its own call', async () => {
    const { broker } = createTestBroker();
    const calls = [
      { name: 'Read', arguments: { path: 'a.txt' } },
      { name: 'Write', arguments: { path: 'b.txt', content: 'B' } },
      { name: 'Read', arguments: { path: 'missing' } },
    ];
    const handle = broker.submit({ command: node, args: [fixture('tool-caller.mjs')], input: { calls }, tools: [READ, WRITE] });
    const updates: TaskUpdate[] = [];
    handle.on('update', (update) => updates.push(update));
    const pending = await waitFor(() => {
      const waiting = broker.get(handle.id)?.pendingToolCalls;
      return waiting?.length === 3 ? waiting : undefined;
    }, 'three calls to wait');
    expect(pending.map((c) => [c.name, c.arguments])).toEqual(calls.map((c) => [c.name, c.arguments]));
    expect(new Set(pending.map((c) => c.callId)).size).toBe(3);
    expect(updates.filter((u) => u.kind === 'tool_call').map((u) => u.toolCall?.callId)).toEqual(pending.map((c) => c.callId));
    const [readA, write, readMissing] = pending as [(typeof pending)[0], (typeof pending)[0], (typeof pending)[0]];

    // Answered out of order; an unknown id and a second answer are refused.
    expect(broker.answerToolCall(handle.id, readMissing.callId, { error: 'ENOENT: no such file' })).toBe(true);
    expect(broker.answerToolCall(handle.id, readMissing.callId, { content: 'again' })).toBe(false);
    expect(broker.answerToolCall(handle.id, 'no-such-call', { content: 'x' })).toBe(false);
    expect(broker.get(handle.id)?.pendingToolCalls?.map((c) => c.callId)).toEqual([readA.callId, write.callId]);
    expect(broker.answerToolCall(handle.id, write.callId, { content: { written: 1 } })).toBe(true);
    expect(broker.answerToolCall(handle.id, readA.callId, { content: 'text of a' })).toBe(true);

    const result = await handle.result;
    expect(result.data).toEqual({
      offered: ['Read', 'Write'],
      results: [{ content: 'text of a' }, { content: { written: 1 } }, { error: 'tool call Read failed: ENOENT: no such file' }],
    });
    expect(broker.get(handle.id)?.pendingToolCalls).toBeUndefined();
    const answered = updates.filter((u) => u.kind === 'tool_result').map((u) => u.toolCall?.callId);
    expect(answered).toEqual([readMissing.callId, write.callId, readA.callId]);
  });

  test('a snapshot carries a preview and the size of long arguments; the tool_call update carries them whole', async () => {
    const { broker } = createTestBroker();
    const content = 'é'.repeat(MAX_SNAPSHOT_ARGUMENTS_CHARS); // 128 KiB of UTF-8 in the JSON
    const calls = [
      { name: 'Write', arguments: { path: 'big.txt', content } },
      { name: 'Read', arguments: { path: 'small.txt' } },
    ];
    const handle = broker.submit({ command: node, args: [fixture('tool-caller.mjs')], input: { calls }, tools: [READ, WRITE] });
    const updates: TaskUpdate[] = [];
    handle.on('update', (update) => updates.push(update));
    const pending = await waitFor(() => {
      const waiting = broker.get(handle.id)?.pendingToolCalls;
      return waiting?.length === 2 ? waiting : undefined;
    }, 'two calls to wait');
    const big = pending.find((c) => c.name === 'Write')!;
    const json = JSON.stringify(calls[0]!.arguments);
    expect(big.arguments).toBe(json.slice(0, ARGUMENTS_PREVIEW_CHARS) + '…');
    expect(big.argumentsBytes).toBe(Buffer.byteLength(json));
    // A short one is whole, with no size.
    expect(pending.find((c) => c.name === 'Read')).toMatchObject({ arguments: { path: 'small.txt' } });
    expect(pending.find((c) => c.name === 'Read')).not.toHaveProperty('argumentsBytes');
    // The caller that answers gets them whole from the update.
    const announced = updates.find((u) => u.kind === 'tool_call' && u.toolCall?.callId === big.callId)?.toolCall;
    expect(announced?.arguments).toEqual(calls[0]!.arguments);
    for (const call of pending) expect(broker.answerToolCall(handle.id, call.callId, { content: 'ok' })).toBe(true);
    expect((await handle.result).data).toMatchObject({ results: [{ content: 'ok' }, { content: 'ok' }] });
  });

  test('a call to a tool the task was not offered gets an error result at once, naming the offered ones', async () => {
    const { broker } = createTestBroker();
    const offered = broker.submit({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Bash', arguments: { command: 'ls' } }] },
      tools: [READ, WRITE],
    });
    expect((await offered.result).data).toEqual({
      offered: ['Read', 'Write'],
      results: [{ error: 'tool call Bash failed: tool "Bash" was not offered to this task (offered: Read, Write)' }],
    });
    const none = broker.submit({ command: node, args: [fixture('tool-caller.mjs')], input: { calls: [{ name: 'Read' }] } });
    expect((await none.result).data).toEqual({
      offered: [],
      results: [{ error: 'tool call Read failed: tool "Read" was not offered to this task (offered: none)' }],
    });
  });

  test('a malformed tool call is answered with an error result, or fails the task as a protocol error; never dropped (Y6n)', async () => {
    const { broker } = createTestBroker();
    const call = (input: Record<string, unknown>) =>
      broker.submit({ command: node, args: [fixture('raw-tool-caller.mjs')], input: { name: 'Read', ...input }, tools: [READ] });
    // `arguments` an array, with a call id that can be answered: an error result; the agent goes on.
    const answered = call({ arguments: ['a', 'b'] });
    const { result } = (await answered.result).data as { result: Record<string, unknown> };
    expect(result).toMatchObject({ type: 'tool_result', call_id: 'c1' });
    expect(result.error).toMatch(/^malformed tool_call: tool_call "arguments" must be an object: /);
    // A call id that cannot be answered (too long, not a string): the task fails as a protocol error.
    for (const callId of ['x'.repeat(201), 5]) {
      const failed = await settle(call({ call_id: callId, arguments: {} }).result);
      expect(!failed.ok && TaskError.is(failed.error) && [failed.error.reason, failed.error.message]).toEqual([
        'protocol',
        expect.stringMatching(/tool_call ("call_id" is longer than 200 characters|without "call_id")/),
      ]);
    }
  });

  test('an agent that waits on a tool call without heartbeats is not killed by the watchdog', async () => {
    const { broker } = createTestBroker();
    // Long enough for the agent to start and connect on a busy machine (silence before the call is a stall).
    const heartbeatTimeoutMs = 2000;
    const handle = broker.submit({
      command: node,
      args: [fixture('raw-tool-caller.mjs')],
      input: { name: 'Read', arguments: { path: 'a' } },
      tools: [READ],
      heartbeatTimeoutMs,
    });
    const [call] = await waitFor(() => broker.get(handle.id)?.pendingToolCalls, 'the call');
    // Three watchdog periods pass with the agent silent, waiting on its caller.
    const since = Date.parse(call!.calledAt);
    await waitFor(() => Date.now() - since > 3 * heartbeatTimeoutMs, 'three watchdog periods');
    expect(broker.get(handle.id)?.state).toBe('running');
    expect(broker.answerToolCall(handle.id, call!.callId, { content: 'text of a' })).toBe(true);
    expect((await handle.result).data).toEqual({
      result: { type: 'tool_result', task_id: handle.id, call_id: 'c1', content: 'text of a' },
    });
  });

  test('cancel reaches a task waiting on a tool call: cancelled, the call dropped, no process left', async () => {
    const { broker, ipcDir } = createTestBroker();
    const handle = broker.submit({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read' }] },
      tools: [READ],
    });
    const [call] = await waitFor(() => broker.get(handle.id)?.pendingToolCalls, 'the call');
    const pid = broker.get(handle.id)!.pid!;
    broker.cancel(handle.id, 'the client went away');
    const outcome = await settle(handle.result);
    expect(!outcome.ok && TaskError.is(outcome.error) && outcome.error.reason).toBe('cancelled');
    expect(broker.get(handle.id)?.pendingToolCalls).toBeUndefined();
    expect(broker.answerToolCall(handle.id, call!.callId, { content: 'late' })).toBe(false);
    await handle.finished;
    await waitUntilGone([pid]);
    expect(leftovers(ipcDir)).toEqual([]);
  });

  test('calls of an attempt that ended wait no more: a retried task starts with none', async () => {
    const { broker } = createTestBroker();
    const handle = broker.submit({
      command: node,
      args: [fixture('raw-tool-caller.mjs')],
      input: { name: 'Read' },
      tools: [READ],
      retries: { max: 1, backoffMs: 10 },
    });
    await waitFor(() => broker.get(handle.id)?.pendingToolCalls, 'the first attempt’s call');
    // Attempt 1's agent dies while its call waits; attempt 2 calls again under the same id, as a new call.
    process.kill(broker.get(handle.id)!.pid!, 'SIGKILL');
    await waitFor(() => broker.get(handle.id)?.attempt === 2, 'the second attempt');
    expect(broker.logOf(handle.id).some((l) => l.text.includes('attempt 1 ended: 1 tool call(s) no longer wait (c1)'))).toBe(true);
    await waitFor(() => broker.get(handle.id)?.pendingToolCalls, 'the second attempt’s call');
    expect(broker.get(handle.id)?.pendingToolCalls).toHaveLength(1);
    expect(broker.answerToolCall(handle.id, 'c1', { content: 'now' })).toBe(true);
    expect((await handle.result).data).toMatchObject({ result: { content: 'now' } });
  });

  test("a spec from a library caller gets the request's check of its tools, in one line", () => {
    const { broker } = createTestBroker();
    const submit = (tools: unknown) => () => broker.submit({ command: node, tools: tools as ToolDefinition[] });
    expect(submit([{ name: 'Read' }])).toThrow('Expected `tools[0].input_schema` to be a JSON Schema object, got undefined');
    expect(submit([READ, READ])).toThrow('Expected each of `tools` once, got `Read` (string) twice');
    expect(submit('Read')).toThrow('Expected `tools` to be an array of tools, got `Read` (string)');
  });

  test('a Retry of a task that left memory offers its tools again', async () => {
    const { broker } = createTestBroker({ dataDir: tempDir() });
    await broker.ready;
    const handle = broker.submit({ command: node, args: [fixture('tool-caller.mjs')], input: { calls: [] }, tools: [READ, WRITE] });
    await handle.result;
    await handle.finished;
    const again = broker.retry(handle.id);
    expect((await again.result).data).toEqual({ offered: ['Read', 'Write'], results: [] });
  });
});
