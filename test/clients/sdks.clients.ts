/**
 * The official SDKs against the gateway's three APIs, streaming and not: `@anthropic-ai/sdk`
 * (pinned, installed like the CLIs) for Messages, `openai` (a dev dependency) for Chat Completions
 * and Responses, and the Python `openai` and `anthropic` (pinned, pip into a venv). Every kind of
 * object and stream event is checked against the SDKs' own types: the Python pydantic models in
 * strict mode, the Anthropic TypeScript types (the OpenAI ones: test/gateway/wire-types.test.ts).
 * Each SDK's default retries meet a failing agent, and the agent's runs are counted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir, waitUntilGone } from '../helpers/core.js';
import { clientFor, ensurePythonClients, runCli } from '../helpers/real-clients.js';
import { typeErrors } from '../helpers/sdk-types.js';
import { standinModels, STANDIN_AGENT, startTestGateway } from '../gateway/helpers.js';
import { NODE_SDK_FILES, NODE_SDK_TYPES, wireSamples } from '../gateway/wire.js';
import { PINS } from './pins.js';

const sdk = clientFor(PINS.anthropicSdk);
const python = ensurePythonClients([PINS.pythonOpenai, PINS.pythonAnthropic]);
const pythonTitle = `python ${PINS.pythonOpenai.join('==')} ${PINS.pythonAnthropic.join('==')}`;

/** The stand-in models, plus `fail-counted`: fails, after a line in `runs` for each run. */
async function gateway() {
  const dir = tempDir('bc-sdk-');
  const runs = path.join(dir, 'runs');
  const failCounted = { command: STANDIN_AGENT, env: { GATEWAY_STANDIN: 'fail', GATEWAY_RUNS_FILE: runs } };
  const gw = await startTestGateway({ models: { ...standinModels(dir), 'fail-counted': failCounted }, api_key: 'k-sdk' }, { dir });
  const count = () => (fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean).length : 0);
  return Object.assign(gw, { dir, runs: count });
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

  test('with its default retries a failing request runs the agent once and is told not to retry', async () => {
    const gw = await gateway();
    const { default: Anthropic } = (await import(pathToFileURL(path.join(sdk.dir, 'index.mjs')).href)) as {
      default: new (options: object) => any;
    };
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k-sdk' }); // maxRetries: 2, the default
    const error = await anthropic.messages
      .create({ model: 'fail-counted', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect((error as { status?: number }).status).toBe(500);
    expect((error as { headers: Headers }).headers.get('x-should-retry')).toBe('false');
    expect(gw.runs()).toBe(1);
  });

  test("every Anthropic object and stream event fits the SDK's TypeScript types", async () => {
    const gw = await gateway();
    const samples = (await wireSamples(gw.baseURL, 'k-sdk')).filter((s) => NODE_SDK_TYPES[s.kind].sdk === 'anthropic');
    expect(new Set(samples.map((s) => s.kind))).toEqual(new Set(['message', 'message.event', 'message.error', 'count_tokens']));
    const values = samples.map((s) => {
      const { namespace, type } = NODE_SDK_TYPES[s.kind];
      return { type: `${namespace}.${type}`, value: s.value, label: s.label };
    });
    const { usage: _usage, ...usageless } = values.find((v) => v.type === 'Messages.Message')!.value as Record<string, unknown>;
    values.push({ type: 'Messages.Message', value: usageless, label: 'control: no usage' });
    const imports = Object.fromEntries(['Messages', 'Shared'].map((ns) => [ns, path.join(sdk.dir, NODE_SDK_FILES[ns]!)]));
    const errors = typeErrors(imports, values);
    expect(errors).toEqual([expect.stringMatching(/^control: no usage: .*'usage'/)]);
  });
});

describe.skipIf('skip' in python)(`${pythonTitle}${'skip' in python ? ` (skipped: ${python.skip})` : ''}`, () => {
  test("every object and stream event of the three APIs validates in strict mode with the SDKs' models; the SDKs read them; default retries run a failing agent once", async () => {
    const gw = await gateway();
    const samples = await wireSamples(gw.baseURL, 'k-sdk');
    const response = samples.find((s) => s.kind === 'response')!.value as Record<string, unknown>;
    const { tools: _tools, ...toolless } = response;
    samples.push({ kind: 'response', label: 'control: no tools', value: toolless });
    const file = path.join(gw.dir, 'samples.json');
    fs.writeFileSync(file, JSON.stringify(samples));
    const script = path.join(ROOT, 'test/clients/python/strict_wire.py');
    const run = await runCli((python as { python: string }).python, [script, file, gw.baseURL, 'k-sdk', 'fail-counted'], {
      cwd: gw.dir,
      env: { PATH: process.env.PATH ?? '', HOME: gw.dir },
    });
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as { errors: string[]; texts: Record<string, string>; failures: Record<string, unknown> };
    expect(report.errors).toEqual([expect.stringMatching(/^control: no tools \(Response\): tools: Field required/)]);
    const apis = ['chat', 'chat stream', 'responses', 'responses stream', 'messages', 'messages stream'];
    expect(report.texts).toEqual(Object.fromEntries(apis.map((api) => [api, 'Hello: ping'])));
    const failure = { status: 500, should_retry: 'false' };
    expect(report.failures).toEqual({ openai: failure, anthropic: failure });
    expect(gw.runs()).toBe(2); // one per SDK call, not three
  });
});

describe.skipIf('skip' in python)(`${pythonTitle}: background responses${'skip' in python ? ` (skipped: ${python.skip})` : ''}`, () => {
  test('create(background=True) then retrieve until completed, cancel of a sleeping agent, a cut stream resumed with starting_after', async () => {
    const gw = await gateway();
    const script = path.join(ROOT, 'test/clients/python/background.py');
    const release = path.join(gw.dir, 'release');
    const run = await runCli((python as { python: string }).python, [script, gw.baseURL, 'k-sdk', gw.dir, release], {
      cwd: gw.dir,
      env: { PATH: process.env.PATH ?? '', HOME: gw.dir },
    });
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as Record<string, any>;
    expect(['queued', 'in_progress']).toContain(report.created_status);
    expect(report.completed).toEqual({ status: 'completed', text: 'Hello: from python', background: true });
    expect(report.cancelled.status).toBe('cancelled');
    // The cancelled agent and its child are gone (the stream's agent was released and ended by itself).
    const [cancelledPids] = report.cancelled.pids.map((name: string) => JSON.parse(fs.readFileSync(path.join(gw.dir, name), 'utf8')));
    await waitUntilGone([cancelledPids.pid, cancelledPids.grandchild], 10_000);
    const { sequence, types, text } = report.resumed;
    expect(sequence).toEqual(sequence.map((_: number, i: number) => i));
    expect(types).toEqual(['response.created', 'response.completed']);
    expect(text).toBe('working, done');
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
    // `output_text` is the SDK's own (create adds it); a stream's final response has only the items
    // in the pinned 6.30.1, as against OpenAI (openai-node#1662, fixed in 6.45.0).
    const streamedText = streamed.output.flatMap((item) =>
      item.type === 'message' ? item.content.flatMap((part) => (part.type === 'output_text' ? [part.text] : [])) : [],
    );
    const texts = [chat.choices[0]!.message.content, chatStreamed, response.output_text, streamedText.join('')];
    expect(texts).toEqual(Array(4).fill('First part.\n\nSecond part.'));
  });
});
