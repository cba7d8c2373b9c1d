import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

// On Windows these are skipped (reported as skipped): SIGINT to a child is a hard kill on Windows.
import { ROOT, fixture, tempDir, waitFor } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

describe.each(RUN_MODES)('a question from the agent (%s)', (mode) => {
  const where = runMode(mode);

  /** `run <args>` without a TTY, until it has printed the unanswered-question notice; then Ctrl-C ends it (130). */
  async function unanswered(args: string[]): Promise<string> {
    const child = spawn(process.execPath, [BIN, 'run', ...args], {
      cwd: ROOT,
      env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...where.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Long before the ask timeout: the notice comes with the question.
    await waitFor(() => stderr.includes('Answer from another shell'), 'the unanswered-question notice', 15_000);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    return stderr;
  }

  test.skipIf(process.platform === 'win32')('without a TTY, a question says at once how long it waits and how to answer it', async () => {
    const stderr = await unanswered(['--ask-timeout', '120000', '--', fixture('asker.mjs')]);
    expect(stderr).toContain('The agent asks: Which branch should I use? (choices: "main", "dev")');
    expect(stderr).toContain('the question waits 2 min (--ask-timeout)');
    expect(stderr).toMatch(/backchannel answer [0-9a-f-]{36} <text>/);
  });

  test.skipIf(process.platform === 'win32')('a choice holding a slash or a comma reads as one choice', async () => {
    const stderr = await unanswered(['--', fixture('asker.mjs'), JSON.stringify(['JavaScript/TypeScript', 'Python', 'C, C++'])]);
    expect(stderr).toContain('The agent asks: Which branch should I use? (choices: "JavaScript/TypeScript", "Python", "C, C++")');
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
