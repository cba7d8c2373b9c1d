import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

// On Windows these are skipped (reported as skipped): SIGINT to a child is a hard kill on Windows.
import { ROOT, fixture, tempDir, waitFor } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

describe.each(RUN_MODES)('a question from the agent (%s)', (mode) => {
  const where = runMode(mode);

  test.skipIf(process.platform === 'win32')('without a TTY, a question says at once how long it waits and how to answer it', async () => {
    const child = spawn(process.execPath, [BIN, 'run', '--ask-timeout', '120000', '--', fixture('asker.mjs')], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...where.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Long before the 2-minute ask timeout: the notice comes with the question.
    await waitFor(() => stderr.includes('Answer from another shell'), 'the unanswered-question notice', 15_000);
    expect(stderr).toContain('The agent asks: Which branch should I use? (choices: "main", "dev")');
    expect(stderr).toContain('the question waits 2 min (--ask-timeout)');
    expect(stderr).toMatch(/backchannel answer [0-9a-f-]{36} <text>/);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
  });

  test.skipIf(process.platform === 'win32')('a choice holding a slash reads as one choice', async () => {
    const choices = JSON.stringify(['JavaScript/TypeScript', 'Python', 'C, C++']);
    const child = spawn(process.execPath, [BIN, 'run', '--', fixture('asker.mjs'), choices], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...where.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await waitFor(() => stderr.includes('Answer from another shell'), 'the unanswered-question notice', 15_000);
    expect(stderr).toContain('The agent asks: Which branch should I use? (choices: "JavaScript/TypeScript", "Python", "C, C++")');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
  });

  test('--ask-timeout is the time the question waits, wherever the task runs', async () => {
    const child = spawn(process.execPath, [BIN, 'run', '--json', '--ask-timeout', '1500', '--', fixture('asker.mjs')], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...where.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout).data.unanswered).toMatch(/1500 ms|timed out|no answer/i);
  }, 60_000);
});
