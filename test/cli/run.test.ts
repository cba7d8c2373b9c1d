import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ROOT, fixture } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

// Scratch directories for this file, removed after all its tests: the tests of a mode run at once, and
// tempDir()'s are removed after each test, whichever test made them.
const scratchDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-run-'));
  scratchDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI as a child process. `onStderr` sees stderr as it arrives. */
function runCli(
  args: string[],
  options: { env?: Record<string, string>; onStderr?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    // Decoded as a stream: a multibyte character split across two chunks stays whole.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => {
      stderr += c;
      options.onStderr?.(stderr, child);
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// The tests are independent (each its own CLI process, task and files; on a hub, tasks of their own),
// so they run at once, both modes' too: their waits (deadlines, grace periods, process start-up)
// overlap. At most five at a time (vitest's maxConcurrency), with room for a busy machine.
describe.concurrent.each(RUN_MODES)('backchannel run (%s)', { timeout: 120_000 }, (mode) => {
  const where = runMode(mode);
  const cli = (args: string[], options: Parameters<typeof runCli>[1] = {}) =>
    runCli(args, { ...options, env: { ...where.env(), ...options.env } });

  test('prints the final payload and exits 0 on success', async () => {
    const run = await cli(['run', '--input', '{"x":1}', '--', fixture('sdk-progress.mjs')]);
    expect(run.code).toBe(0);
    const payload = JSON.parse(run.stdout);
    expect(payload).toMatchObject({ status: 'success', data: { echo: { x: 1 } } });
  });

  test('a command that refuses the appended --task-id= (node -e) crashes with a pointer to --no-task-id-arg', async () => {
    const run = await cli(['run', '--', 'node', '-e', 'console.log("hi")']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/node: bad option: --task-id=/);
    expect(run.stderr).toContain(
      'hint: the command refused the --task-id=<id> argument Backchannel appends; run it with `--no-task-id-arg`',
    );
    // A crash of another kind gets no such hint.
    const other = await cli(['run', '--', fixture('crash.mjs')]);
    expect(other.stderr).not.toContain('--no-task-id-arg');
  });

  test('--json prints exactly one JSON line', async () => {
    const run = await cli(['run', '--json', '--', fixture('quick.mjs')]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).status).toBe('success');
  });

  test('--input @file reads JSON from a file', async () => {
    const file = path.join(tempDir(), 'input.json');
    (await import('node:fs')).writeFileSync(file, '{"from":"file"}');
    const run = await cli(['run', '--json', '--input', `@${file}`, '--', fixture('sdk-progress.mjs')]);
    expect(JSON.parse(run.stdout).data.echo).toEqual({ from: 'file' });
  });

  test('an agent error exits 1; --json gives the reason and the stderr tail', async () => {
    const run = await cli(['run', '--json', '--', fixture('crash.mjs')]);
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stdout);
    expect(body).toMatchObject({ status: 'error', reason: 'crashed' });
    expect(body.stderr_tail).toContain('boom: the agent crashed');
  });

  test('a timeout exits 124 and a stall exits 124', async () => {
    const timeout = await cli(['run', '--json', '--timeout', '800', '--', fixture('stubborn.mjs'), 'chatty']);
    expect(timeout.code).toBe(124);
    expect(JSON.parse(timeout.stdout).reason).toBe('timeout');
    const stall = await cli(['run', '--json', '--heartbeat-timeout', '1500', '--', fixture('stubborn.mjs'), 'silent']);
    expect(stall.code).toBe(124);
    expect(JSON.parse(stall.stdout).reason).toBe('stalled');
  });

  test('--max-tokens stops an agent over its budget: exit 1, reason budget_exceeded, the usage at the stop', async () => {
    const run = await cli(['run', '--json', '--max-tokens', '120', '--', fixture('spender.mjs')]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'budget_exceeded', message: expect.stringContaining('used 150 tokens') });
    const bad = await cli(['run', '--max-cost-usd', 'lots', '--', fixture('quick.mjs')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-cost-usd expects a positive number, got "lots"');
  });

  test('SIGINT cancels the task and exits 130', async () => {
    let signalled = false;
    const run = await cli(['run', '--verbose', '--', fixture('stubborn.mjs'), 'silent'], {
      onStderr: (text, child) => {
        // The agent is up once its first partial shows; then interrupt it like Ctrl-C.
        if (!signalled && text.includes('[backchannel] partial')) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(run.code).toBe(130);
    expect(run.stderr).toContain('cancelled');
  });

  test("says on stderr, once, where the task runs (never under --json); the agent gets this terminal's environment", async () => {
    const env = { BC_CALLER_ONLY: 'from-the-terminal' };
    const plain = await cli(['run', '--', fixture('env-echo.mjs'), 'BC_CALLER_ONLY'], { env });
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout).data).toEqual({ BC_CALLER_ONLY: 'from-the-terminal' });
    const notices = plain.stderr.split('\n').filter((line) => line.includes('runs on the hub'));
    expect(notices).toHaveLength(mode === 'on a hub' ? 1 : 0);
    if (mode === 'on a hub') expect(notices[0]).toContain(where.socket);
    const json = await cli(['run', '--json', '--', fixture('env-echo.mjs'), 'BC_CALLER_ONLY'], { env });
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout).data).toEqual({ BC_CALLER_ONLY: 'from-the-terminal' });
  });

  test('an input of 3 MB runs; one over the 64 MiB limit is one clear line', async () => {
    const dir = tempDir();
    const big = path.join(dir, 'big.json');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(big, JSON.stringify({ text: 'x'.repeat(3 * 1024 * 1024) }));
    const run = await cli(['run', '--json', '--input', `@${big}`, '--', fixture('sdk-progress.mjs')]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).data.echo.text).toHaveLength(3 * 1024 * 1024);
    const huge = path.join(dir, 'huge.json');
    writeFileSync(huge, JSON.stringify({ text: 'x'.repeat(65 * 1024 * 1024) }));
    const refused = await cli(['run', '--input', `@${huge}`, '--', fixture('sdk-progress.mjs')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')[0]).toMatch(/64 MiB/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });

  test('a 10 MB result comes back whole, and the next run works', async () => {
    const first = await cli(['run', '--json', '--input', '{"bytes":10500000}', '--', fixture('big-result.mjs')]);
    expect(first.code, first.stderr).toBe(0);
    const payload = JSON.parse(first.stdout);
    expect(payload.data.text).toHaveLength(10_500_000);
    const next = await cli(['run', '--json', '--', fixture('quick.mjs')]);
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).status).toBe('success');
  });
});

const cli = runCli;

// Once, not per mode: the command line is checked before `run` looks for a hub.
describe('backchannel run usage', () => {
  test('usage errors exit 2 and --help exits 0', async () => {
    expect((await cli(['run'])).code).toBe(2);
    expect((await cli(['run', '--timeout', 'soon', '--', 'x'])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
    const help = await cli(['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes');
  });
});

describe('backchannel send', () => {
  test('sends progress and the result by hand from inside a sub-agent', async () => {
    const script = `node ${BIN} send --progress 50 --message halfway && node ${BIN} send --status success --data '{"by":"hand"}'`;
    const run = await cli(['run', '--json', '--no-task-id-arg', '--', 'sh', '-c', script]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'success', data: { by: 'hand' }, meta: { channel: 'socket' } });
  });

  test('without a socket it prints a data: line (the fallback the broker reads)', async () => {
    const run = await cli(['send', '--status', 'success', '--task-id', 't-1', '--data', '42'], {
      env: { CURSOR_IPC_PATH: '', CURSOR_IPC_TOKEN: '' },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^data: \{"task_id":"t-1","status":"success".*"data":42\}\n\n$/);
  });
});

/** Runs the CLI on a pseudo-terminal (util-linux `script`), answering prompts as they appear. */
function onTerminal(
  args: string[],
  answers: Record<string, string> = {},
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve) => {
    const commandLine = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qfec', commandLine, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), COLUMNS: '120', ...extraEnv },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    const pending = new Map(Object.entries(answers));
    child.stdout.on('data', (chunk) => {
      screen += chunk;
      for (const [prompt, answer] of pending) {
        if (screen.includes(prompt)) {
          pending.delete(prompt);
          child.stdin.write(`${answer}\r`);
        }
      }
    });
    child.on('close', (code) => resolve({ code, screen }));
  });
}

describe.each(RUN_MODES)('backchannel run on a terminal (%s)', (mode) => {
  const where = runMode(mode);

  test('draws a live progress line and prints the result', async () => {
    const demo = path.join(ROOT, 'scripts/demo-agents/agent.mjs');
    const run = await onTerminal(['run', '--label', 'demo', '--', demo, '--mode=progress', '--steps=6', '--interval=150'], {}, where.env());
    expect(run.code).toBe(0);
    expect(run.screen).toContain('"status": "success"');
    // The status line is redrawn in place (carriage return, erase line) with a bar and a percentage.
    expect(run.screen).toMatch(/\r\x1b\[2K. demo · running \[[█░]{20}\] \d+%/);
  });

  test("prompts for a sub-agent's question and sends the answer", async () => {
    const run = await onTerminal(
      ['run', '--json', '--', fixture('asker.mjs')],
      { 'Which branch should I use? [1. "main", 2. "dev"]': 'dev' },
      where.env(),
    );
    expect(run.code).toBe(0);
    expect(run.screen).toContain('"data":{"answer":"dev"}');
  });

  test('an answer that is not a choice is refused with the list and asked again; a number picks a choice', async () => {
    const run = await onTerminal(
      ['run', '--json', '--', fixture('asker.mjs')],
      // The second answer goes in once the refusal is shown: the CLI asks again in the same tick it prints it.
      { 'Which branch should I use? [1. "main", 2. "dev"]': 'maybe', 'is not one of the choices': '2' },
      where.env(),
    );
    expect(run.code).toBe(0);
    expect(run.screen).toContain('"maybe" is not one of the choices: 1. "main", 2. "dev"');
    expect(run.screen).toContain('"data":{"answer":"dev"}');
  });
});
