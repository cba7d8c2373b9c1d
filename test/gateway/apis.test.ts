/**
 * The Anthropic Messages and OpenAI Responses adapters against the stand-in agents: the exact
 * event sequences, the non-streamed shapes, keys and errors in each API's own shape. (The official
 * SDKs and the real CLIs drive the same routes in test/clients.)
 */
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { raw, standinModels, startTestGateway, userMessage } from './helpers.js';

async function gateway(extra: Record<string, unknown> = {}) {
  const dir = tempDir('bc-gwa-');
  return startTestGateway({ models: standinModels(dir), ...extra }, { dir });
}

const ANTHROPIC_HEADERS = { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219' };

describe('Anthropic Messages API', () => {
  test('a streamed message arrives as message_start, a text block of deltas, message_delta with usage, message_stop', async () => {
    const gw = await gateway();
    const res = await raw(
      `${gw.url}/v1/messages?beta=true`,
      { model: 'echo', max_tokens: 100, stream: true, system: [{ type: 'text', text: 'Be brief.' }], messages: userMessage('ping') },
      { headers: ANTHROPIC_HEADERS },
    );
    expect(res.status).toBe(200);
    const names = [...res.text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const datas = res.events.map((e) => e.data);
    expect(datas.every((d, i) => d.type === names[i])).toBe(true);
    expect(datas[0].message).toMatchObject({ type: 'message', role: 'assistant', model: 'echo', content: [] });
    // The prompt's estimate from the start (Claude Code shows it while the answer streams), 0 output so far.
    const estimate = Math.ceil('Be brief.ping'.length / 4);
    expect(datas[0].message.usage).toMatchObject({ input_tokens: estimate, output_tokens: 0 });
    const text = datas.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.text);
    expect(text.join('')).toBe('Hello: <system>\nBe brief.\n</system>\n\n<user>\nping\n</user>');
    expect(datas.at(-2)).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 11, output_tokens: 7 } });
  });

  test('a non-streamed message is one `message`; x-api-key and Authorization both carry the key', async () => {
    const gw = await gateway({ api_key: 'k-anthropic' });
    const body = { model: 'echo', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] };
    const viaXApiKey = await raw(`${gw.url}/v1/messages`, body, { headers: { ...ANTHROPIC_HEADERS, 'x-api-key': 'k-anthropic' } });
    expect(viaXApiKey.status).toBe(200);
    expect(viaXApiKey.json).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'echo',
      content: [{ type: 'text', text: 'Hello: hi' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 11, output_tokens: 7 },
    });
    const viaBearer = await raw(`${gw.url}/v1/messages`, body, { headers: { Authorization: 'Bearer k-anthropic' } });
    expect(viaBearer.status).toBe(200);
    const wrong = await raw(`${gw.url}/v1/messages`, body, { headers: { 'x-api-key': 'nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: expect.stringContaining('x-api-key') },
      request_id: null,
    });
  });

  test("errors are in Anthropic's shape; a claude-* model Claude Code picks by itself runs the default model", async () => {
    const gw = await gateway({ default_model: 'echo' });
    const bad = await raw(`${gw.url}/v1/messages`, { model: 'echo', messages: [{ role: 'tool', content: 'x' }] });
    expect(bad.status).toBe(400);
    expect(bad.json.error.type).toBe('invalid_request_error');
    const missing = await raw(`${gw.url}/v1/messages`, { model: 'gpt-nope', messages: userMessage('x') });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const claude = await raw(`${gw.url}/v1/messages`, { model: 'claude-opus-5-5', messages: userMessage('x') });
    expect(claude.json.content[0].text).toBe('Hello: x');
    const models = standinModels(tempDir('bc-gwa-'));
    const agentMode = await gateway({ models: { ...models, echo: { ...(models.echo as object), mode: 'agent' } } });
    const required = await raw(`${agentMode.url}/v1/messages`, {
      model: 'echo',
      messages: userMessage('x'),
      tools: [{ name: 'Bash', input_schema: {} }],
      tool_choice: { type: 'any' },
    });
    expect(required.status).toBe(400);
    expect(required.json.error.message).toMatch(/cannot call the client's tools/);
  });

  test('count_tokens gives an estimate of about four characters per token', async () => {
    const gw = await gateway();
    const res = await raw(`${gw.url}/v1/messages/count_tokens`, { model: 'echo', messages: userMessage('x'.repeat(400)) });
    expect(res.json).toEqual({ input_tokens: 100 });
  });
});

describe('OpenAI Responses API', () => {
  const client = (baseURL: string) => new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });

  test('a streamed response arrives as the event sequence Codex and the SDK expect', async () => {
    const gw = await gateway();
    const stream = await client(gw.baseURL).responses.create({
      model: 'echo',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'ping' }] }],
      stream: true,
    });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    // The events are the wire's: the text is in the output items, and no SDK-only `output_text` is there.
    expect(completed.response.output).toMatchObject([
      { type: 'message', content: [{ type: 'output_text', text: 'Hello: <system>\nBe brief.\n</system>\n\n<user>\nping\n</user>' }] },
    ]);
    expect(completed.response).not.toHaveProperty('output_text');
    expect(completed.response.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
  });

  test('a non-streamed response carries the same text and usage; errors are OpenAI-shaped', async () => {
    const gw = await gateway();
    const response = await client(gw.baseURL).responses.create({ model: 'echo', input: 'ping' });
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'echo', output_text: 'Hello: ping' });
    const failed = await raw(`${gw.baseURL}/responses`, { model: 'fail', input: 'x' });
    expect(failed.status).toBe(500);
    expect(failed.json.error).toMatchObject({ type: 'api_error', code: 'agent_error' });
    const previous = await raw(`${gw.baseURL}/responses`, { model: 'echo', input: 'x', previous_response_id: 'resp_1' });
    expect(previous.status).toBe(400);
    expect(previous.json.error.param).toBe('previous_response_id');
  });

  test('`output_text` is not on the wire, as in the API; the SDK computes it from the output items', async () => {
    const gw = await gateway();
    const wire = await raw(`${gw.baseURL}/responses`, { model: 'echo', input: 'ping' });
    expect(wire.json.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: 'Hello: ping' }] }]);
    expect(wire.json).not.toHaveProperty('output_text');
    const streamed = await raw(`${gw.baseURL}/responses`, { model: 'echo', input: 'ping', stream: true });
    const responses = streamed.events.flatMap((e) => (e.data.response ? [e.data.response] : []));
    expect(responses.map((r) => r.status)).toEqual(['in_progress', 'in_progress', 'completed']);
    for (const r of responses) expect(r).not.toHaveProperty('output_text');
    // The official SDK adds it, from `output`, on create and retrieve. (Not yet, in the pinned 6.30.1, on
    // `responses.stream().finalResponse()`, against OpenAI too: openai-node#1662, fixed in 6.45.0.)
    const openai = client(gw.baseURL);
    expect((await openai.responses.create({ model: 'echo', input: 'ping' })).output_text).toBe('Hello: ping');
    const background = await openai.responses.create({ model: 'echo', input: 'ping', background: true });
    let done = background;
    await waitFor(async () => (done = await openai.responses.retrieve(background.id)).status === 'completed', 'the response to complete');
    expect(done.output_text).toBe('Hello: ping');
    const retrieved = await raw(`${gw.baseURL}/responses/${background.id}`);
    expect(retrieved.json).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'Hello: ping' }] }] });
    expect(retrieved.json).not.toHaveProperty('output_text');
  });

  test('a failure after the stream started is response.failed', async () => {
    const gw = await gateway();
    const res = await raw(`${gw.baseURL}/responses`, { model: 'fail-streaming', input: 'x', stream: true });
    const last = res.events.at(-1)!.data;
    // `code` is one of the Responses API's own (the SDKs' types list them); the reason is in the message.
    expect(last).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'server_error', message: expect.stringContaining('lost the thread') } },
    });
  });
});
