/**
 * The official SDKs against the gateway's three APIs, streaming and not: `@anthropic-ai/sdk`
 * (pinned, installed like the CLIs) for Messages, `openai` (a dev dependency) for Chat Completions
 * and Responses.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { clientFor } from '../helpers/real-clients.js';
import { standinModels, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const sdk = clientFor(PINS.anthropicSdk);

async function gateway() {
  const dir = tempDir('bc-sdk-');
  return startTestGateway({ models: standinModels(dir), api_key: 'k-sdk' }, { dir });
}

describe.skipIf(sdk.skip !== undefined)(sdk.title, () => {
  test('messages.create, streamed and not, and countTokens', async () => {
    const gw = await gateway();
    const { default: Anthropic } = (await import(pathToFileURL(path.join(sdk.dir, 'index.mjs')).href)) as {
      default: new (options: object) => any;
    };
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k-sdk', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'echo', max_tokens: 64, messages: [{ role: 'user', content: 'ping' }] });
    expect(message).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'Hello: ping' }], stop_reason: 'end_turn' });
    const stream = anthropic.messages.stream({ model: 'echo', max_tokens: 64, messages: [{ role: 'user', content: 'ping' }] });
    const deltas: string[] = [];
    stream.on('text', (text: string) => deltas.push(text));
    const final = await stream.finalMessage();
    expect(deltas.join('')).toBe('Hello: ping');
    expect(final.content[0].text).toBe('Hello: ping');
    expect(final.usage).toMatchObject({ output_tokens: 7 });
    const counted = await anthropic.messages.countTokens({ model: 'echo', messages: [{ role: 'user', content: 'x'.repeat(40) }] });
    expect(counted.input_tokens).toBe(10);
    const wrong = await new Anthropic({ baseURL: gw.url, apiKey: 'nope', maxRetries: 0 }).messages
      .create({ model: 'echo', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error);
    expect((wrong as { status?: number }).status).toBe(401);
  });
});

describe('openai', () => {
  test('chat.completions and responses, streamed and not, give the same text', async () => {
    const gw = await gateway();
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'k-sdk', maxRetries: 0 });
    const chat = await openai.chat.completions.create({ model: 'segments', messages: [{ role: 'user', content: 'x' }] });
    const chatStream = await openai.chat.completions.create({
      model: 'segments',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let chatStreamed = '';
    for await (const chunk of chatStream) chatStreamed += chunk.choices[0]?.delta.content ?? '';
    const response = await openai.responses.create({ model: 'segments', input: 'x' });
    const responseStream = openai.responses.stream({ model: 'segments', input: 'x' });
    const streamed = await responseStream.finalResponse();
    const texts = [chat.choices[0]!.message.content, chatStreamed, response.output_text, streamed.output_text];
    expect(texts).toEqual(Array(4).fill('First part.\n\nSecond part.'));
  });
});
