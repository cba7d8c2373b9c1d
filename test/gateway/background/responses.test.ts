/**
 * Responses background mode (src/gateway/background/) through the official `openai` Node SDK, on
 * real stand-in agents: create then retrieve until completed, cancel of a sleeping agent that leaves
 * no process, a streamed response cut and resumed with `starting_after` (no event lost or repeated),
 * delete, the 404s, and the keep time. The same on a hub across a gateway restart, and with the
 * Python SDK: test/clients/sdks.clients.ts and ../hub-background.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, test } from 'vitest';
import { isAlive, tempDir, waitFor, waitUntilGone } from '../../helpers/core.js';
import { responseIdOf, taskIdOf } from '../../../src/gateway/background/index.js';
import { raw, slowPids, standinModels, startTestGateway } from '../helpers.js';

async function backgroundGateway(extra: Record<string, unknown> = {}) {
  const dir = tempDir('bc-gwbg-');
  const gateway = await startTestGateway({ models: standinModels(dir), ...extra }, { dir });
  const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused', maxRetries: 0 });
  return { dir, gateway, openai, release: () => fs.writeFileSync(path.join(dir, 'release'), '') };
}

describe('background responses', () => {
  test('a response id is the task id: it maps both ways, and nothing else is one', () => {
    const taskId = '019aee43-1c2b-7d4e-8f90-a1b2c3d4e5f6';
    expect(responseIdOf(taskId)).toBe('resp_019aee431c2b7d4e8f90a1b2c3d4e5f6');
    expect(taskIdOf(responseIdOf(taskId))).toBe(taskId);
    for (const id of ['resp_019aee431c2b7d4e8f90a1b2c3d4e5f', 'msg_019aee431c2b7d4e8f90a1b2c3d4e5f6', 'resp_../../x', ''])
      expect(taskIdOf(id), id).toBeUndefined();
  });

  test('create returns at once, queued or in progress; retrieve gives the answer once completed, as the task', async () => {
    const { gateway, openai } = await backgroundGateway();
    const created = await openai.responses.create({ model: 'echo', input: 'in the back', background: true, metadata: { k: 'v' } });
    expect(['queued', 'in_progress']).toContain(created.status);
    expect(created).toMatchObject({ object: 'response', background: true, model: 'echo', metadata: { k: 'v' }, error: null });
    expect(created.id).toMatch(/^resp_[0-9a-f]{32}$/);
    let done = created;
    await waitFor(async () => (done = await openai.responses.retrieve(created.id)).status === 'completed', 'the response to complete');
    expect(done.output_text).toBe('Hello: in the back');
    expect(done.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(done.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
    expect(done.completed_at).toEqual(expect.any(Number));
    expect(done.metadata).toEqual({ k: 'v' });
    // The response is a task like every other: listed, tagged, its id the response's.
    const task = (await gateway.client.listTasks()).find((t) => created.id === `resp_${t.id.replace(/-/g, '')}`);
    expect(task).toMatchObject({ state: 'succeeded', tags: { api: 'responses', background: 'true', source: 'gateway' } });
  });

  test('cancel stops a sleeping agent and its children, answers cancelled; an ended response is answered unchanged', async () => {
    const { dir, gateway, openai } = await backgroundGateway();
    const created = await openai.responses.create({ model: 'slow', input: 'sleep', background: true });
    await waitFor(() => slowPids(dir).length === 1, 'the agent to start');
    // Its partial reached the hub (the agent writes its pids first: on a loaded machine the cancel could overtake it).
    const taskId = taskIdOf(created.id)!;
    await waitFor(
      async () => JSON.stringify((await gateway.client.getTask(taskId)).task.lastPartial ?? null).includes('working'),
      'the agent’s partial',
    );
    const cancelled = await openai.responses.cancel(created.id);
    expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled', error: null });
    // What it had written is kept, as an incomplete message (issue 47 §2: finished work is never thrown away).
    expect(cancelled.output).toMatchObject([
      { type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'working' }] },
    ]);
    // It answered once the agent ended (Y50): the agent is gone already, and its grandchild was
    // SIGKILLed before the answer (the kernel may take a moment to end it on a busy machine), not
    // seconds later at the end of a grace.
    const [{ pid, grandchild }] = slowPids(dir) as [{ pid: number; grandchild: number }];
    expect(isAlive(pid)).toBe(false);
    await waitUntilGone([grandchild], 500);
    expect(await openai.responses.cancel(created.id)).toMatchObject({ status: 'cancelled' });
    expect((await openai.responses.retrieve(created.id)).status).toBe('cancelled');

    const finished = await openai.responses.create({ model: 'echo', input: 'quick', background: true });
    await waitFor(async () => (await openai.responses.retrieve(finished.id)).status === 'completed', 'the response to complete');
    const unchanged = await openai.responses.cancel(finished.id);
    expect(unchanged).toMatchObject({ status: 'completed', output: [{ content: [{ type: 'output_text', text: 'Hello: quick' }] }] });
  });

  test('cancel answers once the agent ended, not when the task was decided (Y50)', async () => {
    const { dir, openai } = await backgroundGateway();
    const created = await openai.responses.create({ model: 'stubborn', input: 'work on', background: true });
    await waitFor(() => slowPids(dir).length === 1, 'the agent to start');
    const [{ pid }] = slowPids(dir) as [{ pid: number }];
    // The agent ignores the cancel and works on until the broker stops it: the answer waits for its end.
    expect(await openai.responses.cancel(created.id)).toMatchObject({ id: created.id, status: 'cancelled' });
    expect(isAlive(pid)).toBe(false);
  });

  test('a streamed background response cut, then resumed with starting_after: no event lost or repeated', async () => {
    const { dir, openai, release } = await backgroundGateway();
    const first: ResponseStreamEvent[] = [];
    const stream = await openai.responses.create({ model: 'slow', input: 'stream me', background: true, stream: true });
    for await (const event of stream) {
      first.push(event);
      if (event.type === 'response.output_text.delta') break; // the connection is cut here
    }
    const id = (first[0] as { response: { id: string } }).response.id;
    expect(first.map((e) => e.sequence_number)).toEqual(first.map((_, i) => i));
    await waitFor(() => slowPids(dir).length === 1, 'the agent to run');
    release();
    const last = first.at(-1)!.sequence_number;
    const rest: ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(id, { stream: true, starting_after: last })) rest.push(event);
    const all = [...first, ...rest];
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i));
    expect(all[0]!.type).toBe('response.created');
    expect(all.at(-1)!.type).toBe('response.completed');
    const text = all.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('working, done');
    // A stream that is not in the background numbers its events the same way.
    const foreground: ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.create({ model: 'echo', input: 'x', stream: true })) foreground.push(event);
    expect(foreground.map((e) => e.sequence_number)).toEqual(foreground.map((_, i) => i));
    // Resuming from the start replays every event, the same ones.
    const again: ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(id, { stream: true })) again.push(event);
    expect(again).toEqual(all);
  });

  test('starting_after past the end of a running response streams only the events after it (Y10n)', async () => {
    const { dir, openai, release } = await backgroundGateway();
    const first: ResponseStreamEvent[] = [];
    const stream = await openai.responses.create({ model: 'slow', input: 'stream me', background: true, stream: true });
    for await (const event of stream) {
      first.push(event);
      if (event.type === 'response.output_text.delta') break;
    }
    const id = (first[0] as { response: { id: string } }).response.id;
    await waitFor(() => slowPids(dir).length === 1, 'the agent to run');
    // Two events past the last one sent so far: the events up to it must not come.
    const after = first.at(-1)!.sequence_number + 2;
    const resumed = await openai.responses.retrieve(id, { stream: true, starting_after: after });
    release();
    const rest: ResponseStreamEvent[] = [];
    for await (const event of resumed) rest.push(event);
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.every((event) => event.sequence_number > after)).toBe(true);
    expect(rest.at(-1)!.type).toBe('response.completed');
  });

  test('delete forgets the response; unknown ids are a 404 in the API shape; background needs store', async () => {
    const { openai, gateway } = await backgroundGateway();
    const created = await openai.responses.create({ model: 'echo', input: 'delete me', background: true });
    await openai.responses.delete(created.id);
    await expect(openai.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    for (const id of ['resp_nope', `resp_${'0'.repeat(32)}`, 'resp_%E0%A4%A']) {
      const missing = await raw(`${gateway.baseURL}/responses/${id}`);
      expect(missing.status).toBe(404);
      expect(missing.json.error).toMatchObject({ type: 'not_found_error', message: expect.stringContaining(id) });
    }
    // Another task's id is no response.
    const chat = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', messages: [{ role: 'user', content: 'x' }] });
    const taskId = chat.headers['x-backchannel-task-id'] as string;
    expect((await raw(`${gateway.baseURL}/responses/resp_${taskId.replace(/-/g, '')}`)).status).toBe(404);
    const unstored = await raw(`${gateway.baseURL}/responses`, { model: 'echo', input: 'x', background: true, store: false });
    expect(unstored.status).toBe(400);
    expect(unstored.json.error.param).toBe('store');
  });

  test('an ended response is kept background_keep_ms, then it is a 404', async () => {
    const { openai, gateway } = await backgroundGateway({ background_keep_ms: 1 });
    const created = await openai.responses.create({ model: 'echo', input: 'short-lived', background: true });
    await waitFor(async () => (await gateway.client.listTasks())[0]?.state === 'succeeded', 'the task to end');
    await waitFor(
      () =>
        openai.responses.retrieve(created.id).then(
          () => false,
          (e: unknown) => e instanceof OpenAI.NotFoundError,
        ),
      'the response to expire',
    );
  });

  test('at most max_concurrent + max_queued background responses are unended at once: beyond, a 429 with Retry-After', async () => {
    const { dir, openai, gateway, release } = await backgroundGateway({ max_concurrent: 1, max_queued: 0 });
    const first = await openai.responses.create({ model: 'slow', input: 'hold the slot', background: true });
    const refused = await raw(`${gateway.baseURL}/responses`, { model: 'echo', input: 'x', background: true });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json.error).toMatchObject({ type: 'rate_limit_error', code: 'queue_full' });
    await waitFor(() => slowPids(dir).length === 1, 'the agent to run');
    release();
    await waitFor(async () => (await openai.responses.retrieve(first.id)).status === 'completed', 'the first to complete');
    const next = await openai.responses.create({ model: 'echo', input: 'now', background: true });
    expect(['queued', 'in_progress', 'completed']).toContain(next.status);
  });
});
