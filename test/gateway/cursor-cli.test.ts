/**
 * The default route: requests answered by the cursor-cli template, which runs a stand-in `agent`
 * (test/fixtures/gateway/bin/agent: the recorded Cursor stream-json plus a `--list-models` list).
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { raw, startTestGateway, userMessage } from './helpers.js';

const AGENT = fixture('gateway/bin/agent');
/** The `result` text of test/fixtures/standins/recordings/cursor/normal.ndjson. */
const SEGMENTS = ["I'll read the README and list the tests.", 'The README describes a tiny demo project; there are 4 test files.'];

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

function cursorModels(dir: string) {
  const scenario = (name: string) => ({
    env: {
      STANDIN_SCENARIO: name,
      STANDIN_ARGV_FILE: path.join(dir, `${name}.argv.json`),
      STANDIN_PID_FILE: path.join(dir, `${name}.pids.json`),
    },
  });
  return {
    'cursor-cli': scenario('normal'),
    'cursor-error': scenario('error-result'),
    'cursor-auth': scenario('auth'),
    'cursor-silent': scenario('silent'),
    sonnet: { cli_model: 'sonnet-4.5', ...scenario('ansi') },
  };
}

async function gatewayWithCursor(extra: Record<string, unknown> = {}) {
  const dir = tempDir('bc-gwc-');
  const gateway = await startTestGateway({ cursor_cli_path: AGENT, models: cursorModels(dir), ...extra }, { dir });
  return { dir, gateway, openai: new OpenAI({ baseURL: gateway.baseURL, apiKey: 'unused', maxRetries: 0 }) };
}

describe('the cursor-cli template behind the gateway', () => {
  test("streams each assistant segment as content and ends with the CLI's result", async () => {
    const { dir, openai } = await gatewayWithCursor();
    const stream = await openai.chat.completions.create({
      model: 'cursor-cli',
      messages: [{ role: 'user', content: 'Summarise README.md' }],
      stream: true,
    });
    const deltas: string[] = [];
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) deltas.push(content);
    }
    expect(deltas).toEqual([SEGMENTS[0], `\n\n${SEGMENTS[1]}`]); // a new segment is set off by a blank line
    const argv = JSON.parse(fs.readFileSync(path.join(dir, 'normal.argv.json'), 'utf8'));
    expect(argv.argv).toEqual(expect.arrayContaining(['-p', 'Summarise README.md', '--output-format', 'stream-json', '--trust']));
    expect(argv.argv).not.toContain('--force');
  });

  test('answers a non-streamed request with the same text a stream gets', async () => {
    const { openai } = await gatewayWithCursor();
    const answer = await openai.chat.completions.create({ model: 'cursor-cli', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toBe(SEGMENTS.join('\n\n'));
    expect(answer.usage!.total_tokens).toBeGreaterThan(0);
  });

  test('passes a configured cli_model as --model', async () => {
    const { dir, openai } = await gatewayWithCursor();
    const answer = await openai.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toContain('4 test files');
    const { argv } = JSON.parse(fs.readFileSync(path.join(dir, 'ansi.argv.json'), 'utf8'));
    expect(argv[argv.indexOf('--model') + 1]).toBe('sonnet-4.5');
  });

  test("a CLI error result is a 500 with the CLI's message", async () => {
    const { gateway } = await gatewayWithCursor();
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'cursor-error', messages: userMessage('hi') });
    expect(res.status).toBe(500);
    expect(res.json.error.message).toContain('Usage limit reached');
  });

  test('a CLI that is not logged in is a 500 with the login hint', async () => {
    const { gateway } = await gatewayWithCursor();
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'cursor-auth', messages: userMessage('hi') });
    expect(res.status).toBe(500);
    expect(res.json.error.message).toMatch(/agent login/);
  });

  test('a missing CLI is a 503 saying how to install it, before any task, and /health says degraded', async () => {
    const { gateway } = await gatewayWithCursor({ cursor_cli_path: '/nonexistent/agent' });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'cursor-cli', messages: userMessage('hi') });
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ type: 'api_error', code: 'agent_unavailable' });
    expect(res.json.error.message).toMatch(/not installed: install it with `curl https:\/\/cursor.com\/install/);
    expect(await gateway.client.listTasks()).toEqual([]);
    const health = await raw(`${gateway.url}/health`);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: 'degraded', agent_cli: { available: false, path: '/nonexistent/agent' } });
    expect(health.json.problems[0]).toMatch(/^model `cursor-cli`: The Cursor CLI .* is not installed/);
  });

  test("the CLI's first token reaches the client within milliseconds", async () => {
    const { gateway } = await gatewayWithCursor({ cursor_cli_path: fixture('gateway/bin/agent-timestamps') });
    const latencies: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'cursor-cli', stream: true, messages: userMessage('t') });
      const first = res.events.find((e) => e.data !== '[DONE]' && e.data.choices[0]?.delta.content)!;
      latencies.push(first.at - Number(String(first.data.choices[0].delta.content).split('|')[0]));
      expect(res.events.map((e) => (e.data === '[DONE]' ? '' : (e.data.choices[0]?.delta.content ?? ''))).join('')).toMatch(/\|done$/);
    }
    latencies.sort((a, b) => a - b);
    console.info(`gateway: CLI first token → client (ms): ${latencies.map((l) => l.toFixed(1)).join(', ')}`);
    expect(latencies[1]!).toBeLessThan(200); // the design's bound; a loaded shared machine still meets it
  });

  test('a client that disconnects mid-stream stops the CLI and the workers it left behind', async () => {
    const { dir, gateway } = await gatewayWithCursor();
    const res = await raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'cursor-silent', stream: true, messages: userMessage('hi') },
      {
        onEvent: () => true, // the role chunk, sent on the template's first partial
      },
    );
    expect(res.status).toBe(200);
    const pidFile = path.join(dir, 'silent.pids.json');
    await waitFor(() => fs.existsSync(pidFile), 'the stand-in CLI to start');
    const { pid, worker } = JSON.parse(fs.readFileSync(pidFile, 'utf8')) as { pid: number; worker: number };
    await waitUntilGone([pid, worker], 10_000);
    await waitFor(async () => (await gateway.client.listTasks())[0]?.state === 'cancelled', 'the task to be cancelled');
    const agentPid = (await gateway.client.listTasks())[0]!.pid;
    if (agentPid !== undefined) await waitUntilGone([agentPid], 10_000);
  });
});

describe('models and health', () => {
  test("/v1/models lists the configured models and the CLI's own", async () => {
    const { openai } = await gatewayWithCursor();
    const models = [];
    for await (const model of openai.models.list()) models.push(model);
    expect(models.map((m) => m.id)).toEqual([
      'cursor-cli',
      'cursor-error',
      'cursor-auth',
      'cursor-silent',
      'sonnet',
      'auto',
      'gpt-5',
      'sonnet-4.5',
    ]);
    expect(models.find((m) => m.id === 'gpt-5')).toMatchObject({ object: 'model', owned_by: 'cursor' });
    expect(models.find((m) => m.id === 'sonnet')).toMatchObject({ object: 'model', owned_by: 'backchannel' });
    expect(await openai.models.retrieve('auto')).toMatchObject({ id: 'auto' });
  });

  test("a model from the CLI's list runs the template with --model", async () => {
    const dir = tempDir('bc-gwc-');
    process.env.STANDIN_ARGV_FILE = path.join(dir, 'argv.json'); // CLI models get what env_allow lets through
    const gateway = await startTestGateway({ cursor_cli_path: AGENT, env_allow: ['STANDIN_*'] }, { dir });
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'gpt-5', messages: userMessage('hi') });
    expect(res.status).toBe(200);
    const { argv } = JSON.parse(fs.readFileSync(path.join(dir, 'argv.json'), 'utf8'));
    expect(argv[argv.indexOf('--model') + 1]).toBe('gpt-5');
  });

  test('/v1/models still answers when the CLI prints no list', async () => {
    const { openai } = await gatewayWithCursor({ cursor_cli_path: fixture('standins/bin/agent') });
    const models = [];
    for await (const model of openai.models.list()) models.push(model.id);
    expect(models).toEqual(['cursor-cli', 'cursor-error', 'cursor-auth', 'cursor-silent', 'sonnet']);
  });

  test('/health reports the CLI and the default model', async () => {
    const { gateway } = await gatewayWithCursor();
    const res = await raw(`${gateway.url}/health`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      status: 'ok',
      problems: [],
      agent_cli: { available: true, path: AGENT },
      default_model: 'cursor-cli',
      max_concurrent: 5,
    });
  });
});
