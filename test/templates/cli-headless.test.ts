/**
 * runHeadless (shared by the cursor-cli and claude-code templates) driving the stand-in CLIs as real
 * processes, with a recording task object in place of the SDK. The same templates run under the real
 * broker in cursor-cli.test.ts / claude-code.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runHeadless } from '../../templates/_shared/run-headless.mjs';
import * as claude from '../../templates/claude-code/translate.mjs';
import * as cursor from '../../templates/cursor-cli/translate.mjs';
import { isAlive, waitUntilGone } from '../helpers/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const standins = path.join(root, 'test/fixtures/standins/bin');

interface Recorder {
  task: { signal: AbortSignal; partial(data: unknown): void; meta(fields: Record<string, unknown>): void };
  partials: Array<Record<string, unknown>>;
  meta: Record<string, unknown>;
  abort(): void;
}

function recorder(): Recorder {
  const controller = new AbortController();
  const partials: Array<Record<string, unknown>> = [];
  const meta: Record<string, unknown> = {};
  return {
    task: {
      signal: controller.signal,
      partial: (data) => partials.push(data as Record<string, unknown>),
      meta: (fields) => Object.assign(meta, fields),
    },
    partials,
    meta,
    abort: () => controller.abort(new Error('cancelled')),
  };
}

let dir: string;
const savedEnv = { ...process.env };
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-headless-'));
});
afterEach(() => {
  process.env = { ...savedEnv };
  fs.rmSync(dir, { recursive: true, force: true });
});

function run(
  vendor: 'cursor' | 'claude',
  scenario: string,
  rec: Recorder,
  extra: { bin?: string; killGraceMs?: number; idleTimeoutMs?: number } = {},
) {
  process.env.STANDIN_SCENARIO = scenario;
  process.env.STANDIN_ARGV_FILE = path.join(dir, 'argv.json');
  process.env.STANDIN_PID_FILE = path.join(dir, 'pids.json');
  const isCursor = vendor === 'cursor';
  return runHeadless(rec.task, {
    product: isCursor ? 'the Cursor CLI' : 'Claude Code',
    bin: extra.bin ?? path.join(standins, isCursor ? 'agent' : 'claude'),
    args: isCursor ? cursor.buildCursorArgs({ prompt: 'hi', workspace: dir }) : claude.buildClaudeArgs({ prompt: 'hi' }),
    cwd: dir,
    translator: isCursor ? cursor.createCursorTranslator() : claude.createClaudeTranslator(),
    looksLikeAuthFailure: isCursor ? cursor.looksLikeAuthFailure : claude.looksLikeAuthFailure,
    loginHint: 'LOGIN HINT',
    installHint: 'INSTALL HINT',
    killGraceMs: extra.killGraceMs ?? 500,
    idleTimeoutMs: extra.idleTimeoutMs,
  });
}

/** Pids the stand-in recorded (leader, then its lingering worker); empty if it was stopped before it wrote them. */
function pids(): number[] {
  const file = path.join(dir, 'pids.json');
  return fs.existsSync(file) ? Object.values(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, number>) : [];
}

describe.each(['cursor', 'claude'] as const)('runHeadless with the %s stand-in', (vendor) => {
  it('returns the result text and reports init, text and tool steps as partials', async () => {
    const rec = recorder();
    const result = await run(vendor, 'normal', rec);
    expect(result.tool_calls).toBe(2);
    expect(result.text).toMatch(vendor === 'cursor' ? /4 test files/ : /no test script/);
    expect(rec.partials[0]).toMatchObject({ phase: 'init' });
    expect(rec.partials.some((p) => typeof p.text === 'string')).toBe(true);
    const steps = rec.partials.filter((p) => p.step !== undefined);
    expect(steps.filter((p) => p.phase === 'started').map((p) => p.step)).toEqual([1, 2]);
    expect(steps.filter((p) => p.phase === 'completed')).toHaveLength(2);
    expect(rec.meta).toMatchObject({ session_id: expect.any(String), model_used: expect.any(String), tool_calls: 2 });
    if (vendor === 'claude') expect(rec.meta).toMatchObject({ total_cost_usd: 0.0487215, token_usage: { output: 181 } });
  });

  it('ignores stdin and keeps the task hand-off variables away from the CLI', async () => {
    process.env.CURSOR_IPC_TOKEN = 'f'.repeat(64);
    process.env.CURSOR_TASK_ID = 'not-for-the-cli';
    await run(vendor, 'normal', recorder());
    const seen = JSON.parse(fs.readFileSync(path.join(dir, 'argv.json'), 'utf8')) as { stdin: string; handoff: string[]; cwd: string };
    expect(seen.stdin).toBe('char'); // /dev/null, not a pipe the CLI would wait on
    expect(seen.handoff).toEqual([]);
    expect(fs.realpathSync(seen.cwd)).toBe(fs.realpathSync(dir));
  });

  it('reads ANSI-prefixed lines', async () => {
    const rec = recorder();
    await expect(run(vendor, 'ansi', rec)).resolves.toMatchObject({ tool_calls: 2 });
  });

  it('ends at the result when the CLI does not exit, and stops its whole process group', async () => {
    const rec = recorder();
    const result = await run(vendor, 'no-exit', rec);
    expect(result.tool_calls).toBe(2);
    expect(pids()).toHaveLength(2); // the CLI and its lingering worker
    await waitUntilGone(pids(), 3000);
  });

  it('escalates to SIGKILL when the CLI ignores SIGTERM', async () => {
    process.env.STANDIN_IGNORE_SIGTERM = '1';
    const result = await run(vendor, 'no-exit', recorder(), { killGraceMs: 200 });
    expect(result.tool_calls).toBe(2);
    await waitUntilGone(pids(), 3000);
  });

  it('fails with the stderr tail when the stream ends without a result', async () => {
    const error = await run(vendor, 'crash', recorder()).catch((e: unknown) => e);
    expect(error).toMatchObject({ retryable: true });
    expect(String((error as Error).message)).toMatch(/ended without a result \(exit code 1\)/);
    expect(String((error as Error).message)).toMatch(vendor === 'cursor' ? /stream disconnected/ : /Overloaded/);
  });

  it('turns a login failure into a final error with the login hint', async () => {
    const error = (await run(vendor, 'auth', recorder()).catch((e: unknown) => e)) as Error & { retryable?: boolean };
    expect(error.message).toMatch(/LOGIN HINT/);
    expect(error.retryable).toBe(false);
  });

  it('turns a missing CLI into a final error with the install hint', async () => {
    const error = (await run(vendor, 'normal', recorder(), { bin: path.join(dir, 'no-such-cli') }).catch((e: unknown) => e)) as Error & {
      retryable?: boolean;
    };
    expect(error.message).toMatch(/was not found: .*no-such-cli.* INSTALL HINT/);
    expect(error.retryable).toBe(false);
  });

  it('stops a CLI that goes silent without exiting', async () => {
    const rec = recorder();
    const error = (await run(vendor, 'silent', rec, { idleTimeoutMs: 1000 }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/no output from .* for 1 s/);
    await waitUntilGone(pids(), 3000);
  });

  it('stops the CLI group when the task is cancelled', async () => {
    const rec = recorder();
    const pending = run(vendor, 'slow', rec).catch((e: unknown) => e);
    // Cancel once the run is visibly under way (first partial), not after a fixed sleep.
    await expect.poll(() => rec.partials.length, { timeout: 5000, interval: 20 }).toBeGreaterThan(0);
    rec.abort();
    const outcome = await pending;
    expect(String((outcome as Error).message)).toMatch(/cancelled/);
    for (const pid of pids()) expect(isAlive(pid)).toBe(false);
  });
});

describe('runHeadless with the Cursor stand-in only', () => {
  it('fails with the CLI message when the result has is_error', async () => {
    const error = (await run('cursor', 'error-result', recorder()).catch((e: unknown) => e)) as Error & { retryable?: boolean };
    expect(error.message).toMatch(/Usage limit reached/);
    expect(error.retryable).toBe(true);
  });
});
