import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, fixture, tempDir } from '../helpers/core.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI as a child process. `onStderr` sees stderr as it arrives. */
function cli(args: string[], options: { env?: Record<string, string>; onStderr?: (text: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => {
      stderr += c;
      options.onStderr?.(stderr, child);
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('backchannel run', () => {
  test('prints the final payload and exits 0 on success', async () => {
    const run = await cli(['run', '--input', '{"x":1}', '--', fixture('sdk-progress.mjs')]);
    expect(run.code).toBe(0);
    const payload = JSON.parse(run.stdout);
    expect(payload).toMatchObject({ status: 'success', data: { echo: { x: 1 } } });
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
    const run = await cli(['send', '--status', 'success', '--task-id', 't-1', '--data', '42'], { env: { CURSOR_IPC_PATH: '', CURSOR_IPC_TOKEN: '' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^data: \{"task_id":"t-1","status":"success".*"data":42\}\n\n$/);
  });
});
