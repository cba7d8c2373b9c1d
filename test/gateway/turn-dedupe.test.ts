/**
 * One logical turn runs once (src/gateway/turn-dedupe.ts): the real `openai` SDK with its default
 * retries, raw copies of a request with and without the SDKs' retry header, and a copy joining a
 * running stream. Runs are counted by the stand-in agent itself (a line per run in a file).
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { isAlive, tempDir, waitFor } from '../helpers/core.js';
import { raw, slowPids, STANDIN_AGENT, startTestGateway, userMessage } from './helpers.js';

/** A gateway whose models count their runs in `runs`; `slow` waits for `release`. */
async function countingGateway() {
  const dir = tempDir('bc-gwd-');
  const runs = path.join(dir, 'runs');
  const release = path.join(dir, 'release');
  const model = (mode: string) => ({
    command: STANDIN_AGENT,
    env: { GATEWAY_STANDIN: mode, GATEWAY_RUNS_FILE: runs, GATEWAY_PID_DIR: dir, GATEWAY_RELEASE_FILE: release },
  });
  const gateway = await startTestGateway(
    { models: { fail: model('fail'), 'fail-streaming': model('fail-streaming'), echo: model('echo'), slow: model('slow') } },
    { dir },
  );
  const count = () => (fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean).length : 0);
  return { gateway, dir, count, release: () => fs.writeFileSync(release, '') };
}

describe('one logical turn runs once', () => {
  test("with the openai SDK's default retries a failing request runs its agent once, and says not to retry", async () => {
    const { gateway, count } = await countingGateway();
    const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused' }); // maxRetries: 2, the default
    const error = await openai.chat.completions.create({ model: 'fail', messages: userMessage('x') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    const response = await openai.responses.create({ model: 'fail', input: 'x' }).catch((e: unknown) => e);
    expect(response).toBeInstanceOf(OpenAI.InternalServerError);
    expect(count()).toBe(2);
  });

  test('copies of a failed request from a client that ignores x-should-retry get its answer, not another run', async () => {
    const { gateway, count } = await countingGateway();
    const body = { model: 'fail', messages: userMessage('the same') };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await raw(`${gateway.baseURL}/chat/completions`, body));
    expect(answers.map((a) => a.status)).toEqual([500, 500, 500]);
    expect(new Set(answers.map((a) => a.json.error.message)).size).toBe(1);
    expect(count()).toBe(1);
    // Another body is another request.
    await raw(`${gateway.baseURL}/chat/completions`, { ...body, messages: userMessage('another') });
    expect(count()).toBe(2);
    // A finished answer is not replayed to a copy that does not say it is a retry: it asks again.
    const question = { model: 'echo', messages: userMessage('again') };
    await raw(`${gateway.baseURL}/chat/completions`, question);
    await raw(`${gateway.baseURL}/chat/completions`, question);
    expect(count()).toBe(4);
  });

  test("Claude Code's non-streamed fallback of a stream that failed joins that run: one agent, the same failure", async () => {
    const { gateway, count } = await countingGateway();
    // What the real Claude Code 2.1.332 sends: the stream fails inside it, then at once the same
    // request without streaming, with a lower max_tokens, and again x-stainless-retry-count 0.
    const headers = { 'x-stainless-retry-count': '0', 'x-claude-code-session-id': '3c4e750b-6d58-4081-9549-8c3b32de4b7e' };
    const body = { model: 'fail-streaming', max_tokens: 128000, messages: userMessage('Say hi') };
    const streamed = await raw(`${gateway.url}/v1/messages`, { ...body, stream: true }, { headers });
    expect(streamed.events.map((e) => e.data.type)).toContain('error');
    const fallback = await raw(`${gateway.url}/v1/messages`, { ...body, max_tokens: 64000, stream: false }, { headers });
    expect(fallback.status).toBe(500);
    expect(fallback.json.error.message).toContain('lost the thread');
    expect(fallback.headers['x-backchannel-task-id']).toBe(streamed.headers['x-backchannel-task-id']);
    expect(count()).toBe(1);
    // Another question is another run; so is the same question again once it was answered.
    const echo = { model: 'echo', max_tokens: 100, messages: userMessage('Say hi') };
    await raw(`${gateway.url}/v1/messages`, { ...echo, stream: true }, { headers });
    const again = await raw(`${gateway.url}/v1/messages`, { ...echo, stream: false }, { headers });
    expect(again.status).toBe(200);
    expect(count()).toBe(3);
  });

  test("Codex's retries of a failed stream join it though its maps come in another key order each time", async () => {
    const { gateway, count } = await countingGateway();
    // Codex 0.171.0 retries a failed stream by itself (no SDK retry header), with the same request whose
    // `client_metadata`, a Rust map, is serialised in another key order each time (captured from the real client).
    const metadata = [
      '{"session_id":"s-1","thread_id":"t-1","turn_id":"u-1"}',
      '{"turn_id":"u-1","session_id":"s-1","thread_id":"t-1"}',
      '{"thread_id":"t-1","turn_id":"u-1","session_id":"s-1"}',
    ];
    const tasks = [];
    for (const map of metadata) {
      const body = `{"model":"fail-streaming","input":"Say hi","stream":true,"client_metadata":${map}}`;
      const streamed = await raw(`${gateway.baseURL}/responses`, body, { headers: { 'session-id': 's-1' } });
      expect(streamed.events.map((e) => e.data.type)).toContain('response.failed');
      tasks.push(streamed.headers['x-backchannel-task-id']);
    }
    expect(count()).toBe(1);
    expect(new Set(tasks).size).toBe(1);
    // Another value is another request.
    await raw(`${gateway.baseURL}/responses`, {
      model: 'fail-streaming',
      input: 'Say hi',
      stream: true,
      client_metadata: { turn_id: 'u-2' },
    });
    expect(count()).toBe(2);
  });

  test("an SDK's first attempts are separate requests; its retry joins the last one", async () => {
    const { gateway, count } = await countingGateway();
    const body = { model: 'echo', messages: userMessage('twice') };
    const attempt = (n: number) => raw(`${gateway.baseURL}/chat/completions`, body, { headers: { 'x-stainless-retry-count': String(n) } });
    const first = await attempt(0);
    const second = await attempt(0);
    expect(count()).toBe(2);
    const retry = await attempt(1);
    expect(count()).toBe(2);
    expect(retry.headers['x-backchannel-task-id']).toBe(second.headers['x-backchannel-task-id']);
    expect(retry.headers['x-backchannel-task-id']).not.toBe(first.headers['x-backchannel-task-id']);
    expect(retry.json.choices[0].message.content).toBe('Hello: twice');
  });

  test('a copy of a running stream joins it and gets every delta; the run outlives the client that left', async () => {
    const { gateway, dir, count, release } = await countingGateway();
    const body = { model: 'slow', stream: true, messages: userMessage('long job') };
    const url = `${gateway.baseURL}/chat/completions`;
    const leaving = new AbortController();
    const first = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      signal: leaving.signal,
    });
    expect(first.status).toBe(200);
    await waitFor(() => slowPids(dir).length === 1, 'the agent to start');
    let joined!: () => void;
    const hasJoined = new Promise<void>((resolve) => (joined = resolve));
    const copy = raw(url, body, { onEvent: (e) => void (e.data?.choices?.[0]?.delta?.content === 'working' && joined()) });
    await hasJoined; // the copy got the delta sent before it came
    leaving.abort();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // time for the gateway to see the first client go
    expect(isAlive(slowPids(dir)[0]!.pid)).toBe(true);
    release();
    const answer = await copy;
    const text = answer.events.map((e) => (e.data === '[DONE]' ? '' : (e.data.choices[0]?.delta.content ?? ''))).join('');
    expect(text).toBe('working, done');
    expect(answer.events.at(-1)!.data).toBe('[DONE]');
    expect(count()).toBe(1);
  });

  test('a key reused with another body or model is refused with a 422, never given the first answer', async () => {
    const { gateway, count } = await countingGateway();
    const url = `${gateway.baseURL}/chat/completions`;
    const headers = { 'Idempotency-Key': 'key-1' };
    const first = await raw(url, { model: 'echo', messages: userMessage('mine') }, { headers });
    expect(first.json.choices[0].message.content).toBe('Hello: mine');
    const again = await raw(url, { model: 'echo', messages: userMessage('mine') }, { headers });
    expect(again.json.choices[0].message.content).toBe('Hello: mine');
    expect(count()).toBe(1);
    for (const body of [
      { model: 'echo', messages: userMessage('yours') },
      { model: 'slow', messages: userMessage('mine') },
    ]) {
      const reused = await raw(url, body, { headers });
      expect(reused.status).toBe(422);
      expect(reused.json.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused' });
      expect(reused.json.error.message).toMatch(/^Idempotency-Key is already used/);
      expect(reused.text).not.toContain('Hello: mine');
    }
    // The official SDK (its own credential: its own keys) sees the API's error shape, with its status class.
    const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused', maxRetries: 0 });
    const options = { headers: { 'Idempotency-Key': 'key-2' } };
    await openai.chat.completions.create({ model: 'echo', messages: userMessage('mine') }, options);
    const error = await openai.chat.completions.create({ model: 'echo', messages: userMessage('yours') }, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(count()).toBe(2);
  });

  test("the SDK's retries after its own timeouts join the run in flight instead of starting the agent again", async () => {
    const { gateway, dir, count } = await countingGateway();
    const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused', timeout: 1500 }); // 2 retries
    const error = await openai.chat.completions.create({ model: 'slow', messages: userMessage('x') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(count()).toBe(1);
    // Every attempt gone: the run is cancelled after the grace, its processes stopped.
    await waitFor(async () => (await gateway.client.listTasks())[0]?.state === 'cancelled', 'the task to be cancelled');
    expect(slowPids(dir)).toHaveLength(1);
  });
});
