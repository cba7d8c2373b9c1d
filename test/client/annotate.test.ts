/**
 * A caller annotates its task through the one client (`TaskRun.annotate`): the annotations show in
 * the task's picture while it runs, reach its final payload's meta, are summed by insights when they
 * are the gateway's guard counts (`meta.bridge_guard`), and are bounded with a one-line error. The
 * same cases in this process, over the in-memory pair, and on a real hub over its control endpoint.
 * The agents are real processes (test/fixtures/tool-caller.mjs waits on its caller's tool).
 */
import { describe, expect, test } from 'vitest';
import { TaskError } from '../../src/broker/errors.js';
import { BridgeError, type BackchannelClient, type TaskRun } from '../../src/client/index.js';
import { MAX_ANNOTATION_BYTES, MAX_ANNOTATION_DEPTH } from '../../src/model/annotations.js';
import type { PendingToolCall, ToolDefinition } from '../../src/model/task.js';
import { fixture, settle, waitFor } from '../helpers/core.js';
import { clientBackends } from '../helpers/client-backends.js';

const node = process.execPath;
const READ: ToolDefinition = { name: 'Read', input_schema: { type: 'object' } };

/** Each backend, over a fresh real broker closed after the test. */
const BACKENDS = clientBackends('bc-annotate-hub-');

/** A task that waits on one call to its caller's `Read` until answered, and that call. */
async function waitingTask(client: BackchannelClient): Promise<{ task: TaskRun; call: PendingToolCall }> {
  const task = await client.run({ command: node, args: [fixture('tool-caller.mjs')], input: { calls: [{ name: 'Read' }] }, tools: [READ] });
  const call = await waitFor(() => task.snapshot().pendingToolCalls?.[0], 'the tool call to wait');
  return { task, call };
}

/** `value` nested `depth` objects deep: `{a: {a: … 1}}`. */
function nested(depth: number): Record<string, unknown> {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

describe.each(BACKENDS)('annotating a task through the client %s', (_name, open) => {
  test("annotations merge at the top level, show in the running task's picture and reach its final meta", async () => {
    const client = await open();
    const { task, call } = await waitingTask(client);
    await task.annotate({ bridge_guard: { violations: 1, corrections: 1, unknown_tools: 0 }, note: 'first' });
    await client.annotate(task.id, { bridge_guard: { violations: 2, corrections: 1, unknown_tools: 1 } });
    const expected = { bridge_guard: { violations: 2, corrections: 1, unknown_tools: 1 }, note: 'first' };
    expect((await client.getTask(task.id)).task.annotations).toEqual(expected);
    await task.answerToolCall(call.callId, { content: 'a' });
    const final = await task.result;
    expect(final.meta).toMatchObject({ ...expected, attempts: 1 });
    const { task: ended } = await client.getTask(task.id);
    expect(ended.annotations).toEqual(expected);
    expect(ended.result?.meta).toMatchObject(expected);
    const insights = await client.insights({});
    expect(insights.bridgeGuard).toEqual({ violations: 2, corrections: 1, unknown_tools: 1, replays: 0 });
  });

  test('a task that ends without a final payload keeps its annotations in its picture', async () => {
    const client = await open();
    const { task } = await waitingTask(client);
    await task.annotate({ bridge_guard: { violations: 3, corrections: 3, unknown_tools: 0 } });
    await client.cancel(task.id, 'the caller went away');
    const outcome = await settle(task.result);
    expect(!outcome.ok && TaskError.is(outcome.error) && outcome.error.reason).toBe('cancelled');
    expect((await client.getTask(task.id)).task.annotations).toEqual({ bridge_guard: { violations: 3, corrections: 3, unknown_tools: 0 } });
    expect((await client.insights({})).bridgeGuard).toEqual({ violations: 3, corrections: 3, unknown_tools: 0, replays: 0 });
  });

  test('an annotation out of bounds is refused with one line naming the bound, and the task keeps what it had', async () => {
    const client = await open();
    const { task, call } = await waitingTask(client);
    await task.annotate({ kept: true });
    const refusals: Array<[unknown, RegExp]> = [
      [[1, 2], /Expected `meta` to be an object of annotations, got an array/],
      ['text', /Expected `meta` to be an object of annotations, got `text` \(string\)/],
      [nested(MAX_ANNOTATION_DEPTH + 1), new RegExp(`nest at most ${MAX_ANNOTATION_DEPTH} levels deep`)],
      [{ big: 'x'.repeat(MAX_ANNOTATION_BYTES) }, new RegExp(`at most ${MAX_ANNOTATION_BYTES} characters as JSON, got \\d+`)],
      [{ attempts: 9 }, /not to set `attempts`: the broker writes it/],
    ];
    for (const [meta, message] of refusals) {
      const outcome = await settle(task.annotate(meta as Record<string, unknown>));
      expect(!outcome.ok && BridgeError.is(outcome.error) && outcome.error.code).toBe('invalid_request');
      const text = outcome.ok ? '' : (outcome.error as Error).message;
      expect(text).toMatch(message);
      expect(text).not.toContain('\n');
    }
    // Each part fits, the whole would not.
    const half = 'y'.repeat(MAX_ANNOTATION_BYTES / 2);
    await task.annotate({ one: half });
    await expect(task.annotate({ two: half })).rejects.toSatisfy(
      (error) => BridgeError.is(error) && error.code === 'invalid_request' && /with what the task has already/.test(error.message),
    );
    expect(Object.keys((await client.getTask(task.id)).task.annotations ?? {})).toEqual(['kept', 'one']);
    await task.answerToolCall(call.callId, { content: 'a' });
    expect((await task.result).meta).toMatchObject({ kept: true });
  });

  test('a task that has ended is not annotated (conflict), and an unknown one is not found', async () => {
    const client = await open();
    const { task, call } = await waitingTask(client);
    await task.answerToolCall(call.callId, { content: 'a' });
    await task.result;
    await expect(task.annotate({ late: 1 })).rejects.toSatisfy(
      (error) => BridgeError.is(error) && error.code === 'conflict' && /has ended \(succeeded\)/.test(error.message),
    );
    expect((await client.getTask(task.id)).task.annotations).toBeUndefined();
    await expect(client.annotate('0190aaaa-0000-7000-8000-000000000000', { x: 1 })).rejects.toMatchObject({ code: 'not_found' });
  });
});
