/**
 * POST /v1/chat/completions against tiny stand-in agents (test/fixtures/gateway/agent.mjs), driven
 * by the official `openai` client and by raw HTTP for the exact bytes and the error cases.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { makeBroker } from '../helpers/core.js';
import { raw, slowPids, standinModels, startTestGateway, userMessage } from './helpers.js';

function client(baseURL: string, apiKey = 'unused') {
  return new OpenAI({ baseURL, apiKey, maxRetries: 0 });
}

describe('with the openai client', () => {
  test('a streamed answer arrives as role, content deltas, stop and usage chunks', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const stream = await client(gateway.baseURL).chat.completions.create({
      model: 'echo',
      messages: [{ role: 'user', content: 'ping' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Hello: ping');
    expect(chunks.slice(1, 3).map((c) => c.choices[0]!.delta.content)).toEqual(['Hel', 'lo']);
    const stop = chunks.at(-2)!;
    expect(stop.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'echo')).toBe(true);
  });

  test('a non-streamed request gets one chat.completion with usage', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const answer = await client(gateway.baseURL).chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'ping' }] });
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices[0]).toMatchObject({ index: 0, message: { role: 'assistant', content: 'Hello: ping' }, finish_reason: 'stop' });
    expect(answer.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  test('the default model answers when the request names none, and the prompt keeps the roles', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), default_model: 'echo' }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.model).toBe('echo');
    expect(res.json.choices[0].message.content).toBe('Hello: <system>\nBe brief.\n</system>\n\n<user>\nHi\n</user>');
  });

  test('with an api_key, the client must send it', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), api_key: 'sekrit-key' }, { dir });
    const ok = await client(gateway.baseURL, 'sekrit-key').chat.completions.create({
      model: 'echo',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(ok.choices[0]!.message.content).toBe('Hello: x');
    const wrong = await client(gateway.baseURL, 'nope')
      .chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    const bare = await raw(`${gateway.baseURL}/models`);
    expect(bare.status).toBe(401);
    expect(bare.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    expect((await raw(`${gateway.url}/health`)).status).toBe(200);
  });
});

describe('streaming over raw HTTP', () => {
  test('events are role, deltas, stop, usage, then [DONE] and the end', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, {
      model: 'echo',
      stream: true,
      stream_options: { include_usage: true },
      messages: userMessage('ping'),
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['x-backchannel-task-id']).toMatch(/^[0-9a-f-]{36}$/);
    const shapes = res.events.map((e) =>
      e.data === '[DONE]'
        ? 'DONE'
        : e.data.usage
          ? 'usage'
          : e.data.choices[0].finish_reason
            ? 'stop'
            : e.data.choices[0].delta.role
              ? 'role'
              : 'content',
    );
    expect(shapes).toEqual(['role', 'content', 'content', 'content', 'stop', 'usage', 'DONE']);
    expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  test('without include_usage there is no usage chunk', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', stream: true, messages: userMessage('ping') });
    expect(res.events.some((e) => e.data !== '[DONE]' && 'usage' in e.data)).toBe(false);
    expect(res.events.at(-1)!.data).toBe('[DONE]');
  });

  test("the first chunk carries the agent's first partial and leaves before the answer ends (its latency: bench/gateway.js)", async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'latency', stream: true, messages: userMessage('t') });
    const contents = res.events.filter((e) => e.data !== '[DONE]' && e.data.choices[0]?.delta.content);
    // The partial's text comes first, in a chunk of its own, before the stream ends (the agent answers 300 ms later).
    expect(String(contents[0]!.data.choices[0].delta.content)).toMatch(/^\d+(\.\d+)?\|$/);
    expect(res.events.at(-1)!.data).toBe('[DONE]');
    expect(contents[0]!.at).toBeLessThan(res.events.at(-1)!.at);
    // The role chunk came with (or before) the first content, not after the agent finished.
    expect(res.events[0]!.at).toBeLessThanOrEqual(contents[0]!.at);
  });
});

describe('quiet agents', () => {
  test('a started stream gets keep-alive comments while the agent is silent; clients ignore them', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir, keepAliveMs: 50 });
    const viaClient = (async () => {
      const stream = await client(gateway.baseURL).chat.completions.create({
        model: 'slow',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    })();
    const release = () => fs.writeFileSync(path.join(dir, 'release'), '');
    const res = await raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'slow', stream: true, messages: userMessage('x') },
      {
        onText: (text) => text.includes(': keep-alive\n\n') && release(),
      },
    );
    expect(res.text).toContain(': keep-alive\n\n');
    expect(res.events.map((e) => (e.data === '[DONE]' ? '' : (e.data.choices[0]?.delta.content ?? ''))).join('')).toBe('working, done');
    expect(res.events.at(-1)!.data).toBe('[DONE]');
    expect(await viaClient).toBe('working, done');
  });
});

describe("errors before the stream starts get an HTTP status and OpenAI's error shape", () => {
  test.each([
    ['invalid JSON', '{"model": ', 'invalid_request_error', null],
    ['no messages', { model: 'echo' }, 'invalid_request_error', 'messages'],
    ['empty messages', { model: 'echo', messages: [] }, 'invalid_request_error', 'messages'],
    ['a message without a role', { model: 'echo', messages: [{ content: 'hi' }] }, 'invalid_request_error', 'messages[0].role'],
    ['stream that is not a boolean', { model: 'echo', stream: 'yes', messages: userMessage('hi') }, 'invalid_request_error', 'stream'],
  ])('400 for %s', async (_name, body, type, param) => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, body);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type, param });
    expect(typeof res.json.error.message).toBe('string');
    expect(await gateway.client.listTasks()).toEqual([]);
  });

  test('404 for an unknown model, naming the models there are', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), list_cli_models: false }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'gpt-17', stream: true, messages: userMessage('hi') });
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ type: 'not_found_error', code: 'model_not_found', param: 'model' });
    expect(res.json.error.message).toContain('echo');
  });

  test("500 with the agent's reason when it fails", async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    for (const stream of [false, true]) {
      const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'fail', stream, messages: userMessage('hi') });
      expect(res.status).toBe(500);
      expect(res.json.error).toMatchObject({ type: 'api_error', code: 'agent_error' });
      expect(res.json.error.message).toContain('the model is on fire');
    }
  });

  test('404 for an unknown endpoint, 403 for a foreign Host or Origin', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    expect((await raw(`${gateway.baseURL}/completions`, { prompt: 'x' })).status).toBe(404);
    const rebinding = await raw(`${gateway.baseURL}/models`, undefined, { headers: { Host: `evil.example:${gateway.port}` } });
    expect(rebinding.status).toBe(403);
    const crossSite = await raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'echo', messages: userMessage('x') },
      { headers: { Origin: 'https://evil.example' } },
    );
    expect(crossSite.status).toBe(403);
    expect(await gateway.client.listTasks()).toEqual([]);
  });
});

describe('failures after the stream started', () => {
  test('an agent error becomes a final data: {"error": …} event', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'fail-streaming', stream: true, messages: userMessage('hi') });
    expect(res.status).toBe(200);
    const last = res.events.at(-1)!.data;
    expect(last.error).toMatchObject({ type: 'api_error', code: 'agent_error' });
    expect(last.error.message).toContain('lost the thread');
    expect(res.events.some((e) => e.data === '[DONE]')).toBe(false);
    expect(res.events.map((e) => e.data.choices?.[0]?.delta?.content).filter(Boolean)).toEqual(['partial answer']);
  });
});

describe('timeouts and disconnects stop the agent', () => {
  test('504 after request_timeout_ms; the task is cancelled and its process tree is gone', async () => {
    const dir = tempDir('bc-gw-');
    // Long enough for the agent to start on a loaded machine, so there is a process tree to check.
    const gateway = await startTestGateway({ models: standinModels(dir), request_timeout_ms: 3000 }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage('hi') });
    expect(res.status).toBe(504);
    expect(res.json.error).toMatchObject({ type: 'api_error', code: 'timeout' });
    const [pids] = slowPids(dir);
    await waitUntilGone([pids!.pid, pids!.grandchild], 10_000);
    const [task] = await gateway.client.listTasks();
    expect(task).toMatchObject({ state: 'cancelled' });
    expect(task!.message).toContain('timed out');
  });

  test('a timeout after the stream started ends it with an error event', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), request_timeout_ms: 4000 }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', stream: true, messages: userMessage('hi') });
    expect(res.status).toBe(200);
    expect(res.events.at(-1)!.data.error).toMatchObject({ code: 'timeout' });
  });

  test('a client that disconnects mid-stream cancels its task and the process tree goes', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    await raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'slow', stream: true, messages: userMessage('hi') },
      {
        onEvent: (event) => event.data !== '[DONE]' && event.data.choices?.[0]?.delta.content === 'working',
      },
    );
    const [pids] = slowPids(dir);
    await waitUntilGone([pids!.pid, pids!.grandchild], 10_000);
    await waitFor(async () => (await gateway.client.listTasks())[0]?.state === 'cancelled', 'the task to be cancelled');
    expect((await gateway.client.listTasks())[0]!.message).toContain('client disconnected');
  });
});

describe('giving up and shutting down', () => {
  test('a client that gives up on a non-streamed request cancels its task', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    const controller = new AbortController();
    const pending = client(gateway.baseURL)
      .chat.completions.create({ model: 'slow', messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal })
      .catch((error: unknown) => error);
    await waitFor(() => slowPids(dir).length === 1, 'the agent to start');
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    const [pids] = slowPids(dir);
    await waitUntilGone([pids!.pid, pids!.grandchild], 10_000);
    await waitFor(async () => (await gateway.client.listTasks())[0]?.state === 'cancelled', 'the task to be cancelled');
  });

  test('close() ends running streams with an error event and leaves no process behind', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    let streaming!: () => void;
    const started = new Promise<void>((resolve) => (streaming = resolve));
    const response = raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'slow', stream: true, messages: userMessage('x') },
      {
        onEvent: (event) => void (event.data !== '[DONE]' && event.data.choices?.[0]?.delta.content && streaming()),
      },
    );
    await started;
    await gateway.close();
    const res = await response;
    expect(res.events.at(-1)!.data.error).toMatchObject({ code: 'unavailable' });
    const [pids] = slowPids(dir);
    await waitUntilGone([pids!.pid, pids!.grandchild], 10_000);
  });
});

describe('concurrency and visibility', () => {
  test('with max_concurrent 5 the sixth request waits in the queue, then is answered', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), max_concurrent: 5 }, { dir });
    const requests = Array.from({ length: 6 }, (_, i) =>
      raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage(`request ${i}`) }),
    );
    await waitFor(() => slowPids(dir).length === 5, 'five agents to start');
    await waitFor(async () => (await gateway.client.listTasks()).length === 6, 'six tasks');
    const states = (await gateway.client.listTasks()).map((t) => t.state);
    expect(states.filter((s) => s === 'running')).toHaveLength(5);
    expect(states.filter((s) => s === 'queued')).toHaveLength(1);

    fs.writeFileSync(path.join(dir, 'release'), '');
    const responses = await Promise.all(requests);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(responses.every((r) => r.json.choices[0].message.content === 'working, done')).toBe(true);
    expect(slowPids(dir)).toHaveLength(6);
  });

  test('gateway requests show in broker.tasks() tagged with their source and model', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    await client(gateway.baseURL).chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'what is in src/?' }] });
    const [task] = await gateway.client.listTasks();
    expect(task).toMatchObject({ state: 'succeeded', tags: { source: 'gateway', model: 'echo', stream: 'false' } });
    expect(task!.label).toBe('gateway echo: what is in src/?');
  });

  test("a task's label is the user's prompt, never the reminders Claude Code puts before it", async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir) }, { dir });
    // The first user message of the real Claude Code 2.1.332: its reminders, then what the user typed.
    const reminder = (text: string) => ({ type: 'text', text: `<system-reminder>\n${text}\n</system-reminder>` });
    const content = [reminder("As you answer the user's questions, you can use the following context: …"), reminder('Attribution …')];
    const res = await raw(`${gateway.url}/v1/messages`, {
      model: 'echo',
      max_tokens: 100,
      messages: [{ role: 'user', content: [...content, { type: 'text', text: 'Say hi' }] }],
    });
    expect(res.status, res.text).toBe(200);
    const [task] = await gateway.client.listTasks();
    expect(task!.label).toBe('gateway echo: Say hi');
  });

  test('on a shared broker, the gateway still runs at most max_concurrent requests', async () => {
    const dir = tempDir('bc-gw-');
    const { broker } = makeBroker({ concurrency: 10 });
    const gateway = await startTestGateway({ models: standinModels(dir), max_concurrent: 2 }, { dir, broker });
    // Three different requests: identical copies would join one run (test/gateway/turn-dedupe.test.ts).
    const requests = Array.from({ length: 3 }, (_, i) =>
      raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage(`x${i}`) }),
    );
    await waitFor(() => slowPids(dir).length === 2, 'two agents to start');
    await waitFor(async () => (await gateway.client.counts()).running === 2, 'two running tasks');
    expect(broker.tasks()).toHaveLength(2); // the third waits in the gateway, not in the broker
    fs.writeFileSync(path.join(dir, 'release'), '');
    expect((await Promise.all(requests)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect(broker.tasks()).toHaveLength(3);
    expect((await raw(`${gateway.url}/health`)).json.runs_on).toBe('app');
  });

  test('without a client, the gateway runs requests on a private broker of its own, capped by it', async () => {
    const dir = tempDir('bc-gw-');
    const gateway = await startTestGateway({ models: standinModels(dir), max_concurrent: 2 }, { dir });
    expect(gateway.client.where).toEqual({ kind: 'local' });
    expect((await raw(`${gateway.url}/health`)).json).toMatchObject({ runs_on: 'gateway', max_concurrent: 2 });
    const requests = Array.from({ length: 3 }, (_, i) =>
      raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage(`y${i}`) }),
    );
    // The third waits in the broker's own queue (its concurrency is max_concurrent), not in the gateway.
    await waitFor(async () => (await gateway.client.counts()).queued === 1, 'one queued task');
    expect(await gateway.client.counts()).toEqual({ running: 2, queued: 1 });
    fs.writeFileSync(path.join(dir, 'release'), '');
    expect((await Promise.all(requests)).map((r) => r.status)).toEqual([200, 200, 200]);
  });
});
