/**
 * The cursor-cli and claude-code templates end to end: the real broker runs the template, which
 * runs a stand-in `agent` / `claude` replaying recorded stream-json (test/fixtures/standins).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTask, startBroker, startTask, type TestBroker } from '../helpers/broker.js';
import { waitUntilGone } from '../helpers/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const standins = path.join(root, 'test/fixtures/standins/bin');

let tb: TestBroker;
beforeAll(async () => {
  tb = await startBroker();
});
afterAll(async () => {
  await tb.close();
});

const TEMPLATES = [
  { name: 'cursor-cli', bin: 'agent', binEnv: 'CURSOR_AGENT_BIN', text: /4 test files/, login: /agent login/ },
  { name: 'claude-code', bin: 'claude', binEnv: 'CLAUDE_BIN', text: /no test script/, login: /\/login/ },
] as const;

describe.each(TEMPLATES)('the $name template under the broker', (tpl) => {
  let scratch: string;
  beforeAll(() => {
    scratch = fs.mkdtempSync(path.join(tb.dir, `${tpl.name}-`));
  });

  function spec(scenario: string, input: unknown = { prompt: 'Summarise README.md' }, env: Record<string, string> = {}) {
    return {
      command: path.join(root, 'templates', tpl.name, 'agent.mjs'),
      cwd: scratch,
      input,
      env: {
        PATH: `${standins}${path.delimiter}${process.env.PATH ?? ''}`,
        STANDIN_SCENARIO: scenario,
        STANDIN_PID_FILE: path.join(scratch, `${scenario}.pids.json`),
        STANDIN_ARGV_FILE: path.join(scratch, `${scenario}.argv.json`),
        ...env,
      },
      heartbeatTimeoutMs: 10_000,
      timeoutMs: 30_000,
    };
  }
  const pidsOf = (scenario: string) =>
    Object.values(JSON.parse(fs.readFileSync(path.join(scratch, `${scenario}.pids.json`), 'utf8')) as Record<string, number>);

  it('succeeds with the result text, steps as partials, and session/model/duration in meta', async () => {
    const run = await runTask(tb.broker, spec('normal'));
    expect(run.error).toBeUndefined();
    expect(run.payload?.data).toMatchObject({ text: expect.stringMatching(tpl.text), tool_calls: 2 });
    expect(run.payload?.meta).toMatchObject({
      session_id: expect.any(String),
      model_used: expect.any(String),
      duration_ms: expect.any(Number),
    });
    if (tpl.name === 'claude-code') {
      expect(run.payload?.meta).toMatchObject({ total_cost_usd: 0.0487215, token_usage: { output: 181 }, num_turns: 5 });
    }
    const data = run.partials.map((p) => p.data as Record<string, unknown>);
    expect(data[0]).toMatchObject({ phase: 'init' });
    expect(data.filter((d) => d.phase === 'started').map((d) => d.step)).toEqual([1, 2]);
    expect(data.some((d) => typeof d.text === 'string')).toBe(true);
    const argv = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as {
      argv: string[];
      stdin: string;
      handoff: string[];
    };
    expect(argv.stdin).toBe('char');
    expect(argv.handoff).toEqual([]);
    expect(argv.argv.slice(0, 3)).toEqual(['-p', '--output-format', 'stream-json']);
    expect(argv.argv.slice(-2)).toEqual(['--', 'Summarise README.md']);
    expect(argv.argv).not.toContain('--force');
  });

  it('keeps a prompt that looks like an option a prompt, and passes a prompt over 100 KiB through stdin', async () => {
    const tricky = await runTask(tb.broker, spec('normal', { prompt: '--force' }));
    expect(tricky.error).toBeUndefined();
    const seen = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as { argv: string[] };
    expect(seen.argv.slice(-2)).toEqual(['--', '--force']);
    expect(seen.argv.filter((a) => a === '--force')).toHaveLength(1);

    const long = `Summarise: ${'é'.repeat(200 * 1024)}`; // 400 KiB: one argv string may not exceed 128 KiB (E2BIG)
    const run = await runTask(tb.broker, spec('normal', { prompt: long }));
    expect(run.error).toBeUndefined();
    const stdin = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as {
      argv: string[];
      stdin: string;
      stdin_text: string;
    };
    expect(['pipe', 'socket']).toContain(stdin.stdin); // Node's stdin pipes are socket pairs
    expect(stdin.stdin_text).toBe(long);
    expect(stdin.argv).not.toContain('--');
  });

  it('accepts a plain prompt string and passes the write permission only when allowed', async () => {
    const run = await runTask(tb.broker, spec('normal', { prompt: 'Fix it', allow_writes: true, model: 'm-1' }));
    expect(run.error).toBeUndefined();
    const { argv } = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as { argv: string[] };
    expect(argv).toEqual(expect.arrayContaining(['--model', 'm-1', tpl.name === 'cursor-cli' ? '--force' : 'acceptEdits']));
    const plain = await runTask(tb.broker, spec('normal', 'Just a prompt'));
    expect(plain.payload?.status).toBe('success');
  });

  it('reads ANSI-prefixed output', async () => {
    const run = await runTask(tb.broker, spec('ansi'));
    expect(run.payload?.data).toMatchObject({ tool_calls: 2 });
  });

  it('finishes at the result when the CLI never exits, leaving no process behind', async () => {
    const run = await runTask(tb.broker, spec('no-exit'));
    expect(run.payload?.data).toMatchObject({ tool_calls: 2 });
    await waitUntilGone(pidsOf('no-exit'), 5000);
  });

  it('fails (retryable) with the stderr tail when the stream ends without a result', async () => {
    const run = await runTask(tb.broker, spec('crash'));
    expect(run.error?.reason).toBe('error');
    const message = String((run.error?.payload?.data as { message?: string })?.message);
    expect(message).toMatch(/ended without a result \(exit code 1\)/);
    expect(message).toMatch(tpl.name === 'cursor-cli' ? /stream disconnected/ : /Overloaded/);
    expect(run.error?.payload?.retryable).not.toBe(false);
  });

  it('fails for good with a login hint when the CLI is not logged in', async () => {
    const run = await runTask(tb.broker, { ...spec('auth'), retries: 2 });
    expect(run.error?.reason).toBe('error');
    expect(run.error?.payload?.retryable).toBe(false);
    expect(String((run.error?.payload?.data as { message?: string })?.message)).toMatch(tpl.login);
    expect(run.snapshot.attempt).toBe(1);
  });

  it('fails for good with an install hint when the CLI is missing', async () => {
    const run = await runTask(tb.broker, spec('normal', { prompt: 'x' }, { [tpl.binEnv]: path.join(scratch, 'not-installed') }));
    expect(run.error?.payload?.retryable).toBe(false);
    expect(String((run.error?.payload?.data as { message?: string })?.message)).toMatch(/not found: .*not-installed/);
  });

  it('refuses an input without a prompt', async () => {
    const run = await runTask(tb.broker, spec('normal', { model: 'x' }));
    expect(run.error?.payload?.retryable).toBe(false);
    expect(String((run.error?.payload?.data as { message?: string })?.message)).toMatch(/needs a "prompt"/);
  });

  if (tpl.name === 'claude-code') {
    it('returns the last result of a run with a background sub-agent, its sub-agent text as progress, and run-level usage', async () => {
      const run = await runTask(tb.broker, spec('background'));
      expect(run.error).toBeUndefined();
      expect(run.payload?.data).toMatchObject({ text: 'Final answer: the background agent found 42.' });
      expect(run.payload?.meta).toMatchObject({ model_used: 'claude-opus-5-5', token_usage: { input: 490, output: 68 } });
      const data = run.partials.map((p) => p.data as Record<string, unknown>);
      expect(data.some((d) => d.subagent !== undefined)).toBe(true);
      expect(data.filter((d) => typeof d.text === 'string').every((d) => !String(d.text).includes('sub-agent says'))).toBe(true);
    });

    it('fails for good at the first 401 API retry instead of retrying for minutes', async () => {
      const started = Date.now();
      const run = await runTask(tb.broker, { ...spec('auth401'), retries: 2 });
      expect(run.error?.payload?.retryable).toBe(false);
      expect(String((run.error?.payload?.data as { message?: string })?.message)).toMatch(/\/login.*status 401, authentication_failed/s);
      expect(run.snapshot.attempt).toBe(1);
      expect(Date.now() - started).toBeLessThan(10_000);
      await waitUntilGone(pidsOf('auth401'), 5000);
    });

    it('reports the refusal of bypassPermissions as root as a clear, final error', async () => {
      const run = await runTask(tb.broker, {
        ...spec('root', { prompt: 'x' }, { CLAUDE_PERMISSION_MODE: 'bypassPermissions' }),
        retries: 2,
      });
      expect(run.error?.payload?.retryable).toBe(false);
      expect(String((run.error?.payload?.data as { message?: string })?.message)).toMatch(/refuses bypassPermissions .* as root/);
      expect(run.snapshot.attempt).toBe(1);
    });

    it('passes the task budget on as --max-turns and --max-budget-usd, the smaller turn limit winning', async () => {
      const run = await runTask(tb.broker, { ...spec('normal', { prompt: 'x', max_turns: 50 }), maxTurns: 20, maxCostUsd: 1.5 });
      expect(run.error).toBeUndefined();
      const { argv } = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as { argv: string[] };
      expect(argv.slice(argv.indexOf('--max-turns'), argv.indexOf('--max-turns') + 2)).toEqual(['--max-turns', '20']);
      expect(argv.slice(argv.indexOf('--max-budget-usd'), argv.indexOf('--max-budget-usd') + 2)).toEqual(['--max-budget-usd', '1.5']);
      // The usage the run reported is the task's.
      expect(run.snapshot.usage).toMatchObject({ costUsd: 0.0487215, turns: 5 });
    });

    it('passes partial_output as --include-partial-messages', async () => {
      const run = await runTask(tb.broker, spec('normal', { prompt: 'x', partial_output: true }));
      expect(run.error).toBeUndefined();
      const { argv } = JSON.parse(fs.readFileSync(path.join(scratch, 'normal.argv.json'), 'utf8')) as { argv: string[] };
      expect(argv).toContain('--include-partial-messages');
    });
  }

  it('is cancelled mid-run and stops the CLI', async () => {
    const running = startTask(tb.broker, spec('slow'), (update, handle) => {
      if (update.kind === 'partial') handle.cancel('test cancel');
    });
    const run = await running.done;
    expect(run.snapshot.state).toBe('cancelled');
    expect(run.error?.reason).toBe('cancelled');
    await waitUntilGone(pidsOf('slow'), 5000);
  });
});
