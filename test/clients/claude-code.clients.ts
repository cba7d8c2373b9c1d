/**
 * Real Claude Code (pinned) through the gateway's Anthropic Messages API, and under the `claude-code`
 * template against a fake Anthropic model server.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { runTask, startBroker, startTask, type TestBroker } from '../helpers/broker.js';
import { standinModels, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);
const bin = claude.bin;

/** What Claude Code needs to run headless against a local server, in a private HOME. */
function claudeEnv(baseUrl: string, key: string, home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: key,
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}

describe.skipIf(claude.skip !== undefined)(claude.title, () => {
  test('completes a streamed turn through the gateway (ANTHROPIC_BASE_URL and the gateway key)', async () => {
    const dir = tempDir('bc-cc-');
    const gateway = await startTestGateway({ models: standinModels(dir), default_model: 'echo', api_key: 'k-claude' }, { dir });
    const run = await runCli(bin, ['-p', '--output-format', 'stream-json', '--verbose', '--', 'Say hi'], {
      cwd: dir,
      env: claudeEnv(gateway.url, 'k-claude', dir),
    });
    const lines = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const result = lines.find((l) => l.type === 'result');
    expect(result, run.stderr + run.stdout.slice(-2000)).toMatchObject({ is_error: false });
    expect(result.result).toMatch(/^Hello: /);
    expect(result.result).toContain('Say hi');
    const tasks = await gateway.client.listTasks();
    expect(tasks.length).toBeGreaterThan(0);
    expect(tasks.every((t) => t.tags?.api === 'messages' && t.tags?.stream === 'true')).toBe(true);
  });

  describe('under the claude-code template', () => {
    let tb: TestBroker;
    let model: FakeAnthropic;
    beforeAll(async () => {
      tb = await startBroker();
      model = await startFakeAnthropic({ answer: 'Four test files.' });
    });
    afterAll(async () => {
      await model.close();
      await tb.close();
    });

    const spec = (fake: FakeAnthropic, input: unknown, dir: string) => ({
      command: path.join(ROOT, 'templates/claude-code/agent.mjs'),
      cwd: dir,
      input,
      env: { ...claudeEnv(fake.url, 'dummy', dir), CLAUDE_BIN: bin },
      timeoutMs: 120_000,
      retries: 0,
    });

    test('returns the answer with run-level usage and an API model id', async () => {
      const dir = tempDir('bc-cct-');
      const run = await runTask(tb.broker, spec(model, { prompt: 'How many test files?', model: 'claude-fake-1' }, dir));
      expect(run.error, JSON.stringify(run.error?.payload)).toBeUndefined();
      expect(run.payload?.data).toMatchObject({ text: 'Four test files.' });
      expect(run.payload?.meta).toMatchObject({ model_used: 'claude-fake-1', token_usage: { output: expect.any(Number) } });
      expect(model.requests.some((r) => r.path.startsWith('/v1/messages'))).toBe(true);
    });

    test('leaves no process behind when the wrapper is SIGKILLed mid-request', async () => {
      const dir = tempDir('bc-cct-');
      const hanging = await startFakeAnthropic({ hang: true });
      try {
        const running = startTask(tb.broker, spec(hanging, { prompt: 'Wait for it' }, dir));
        await waitFor(() => hanging.requests.length > 0, 'Claude Code to call the model', 60_000);
        const wrapper = tb.broker.get(running.handle.id)!.pid!;
        const claude = descendants(wrapper);
        expect(claude.length).toBeGreaterThan(0);
        process.kill(wrapper, 'SIGKILL');
        await running.done;
        await waitUntilGone(claude, 10_000);
      } finally {
        await hanging.close();
      }
    });
  });
});

/** Every descendant of `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid !== parent || out.includes(child)) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}
