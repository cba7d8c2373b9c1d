/** `backchannel serve` as a command: usage, and a clean stop that cancels what runs. */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT } from '../helpers/panel.js';
import { waitUntilGone } from '../helpers/processes.js';

const BIN = path.join(ROOT, 'bin', 'backchannel.js');

describe('backchannel serve', () => {
  test('--help explains the options and exits 0', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('--port <n>');
    expect(result.stdout).toContain('--data-dir <dir>');
  });

  test('a bad port is a usage error (exit 2) that names the option', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve', '--port', 'abc'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Expected `--port` to be an integer from 0 to 65535, got `abc`');
  });

  test('prints the panel URL, starts demo tasks on an empty history, and Ctrl+C stops them and exits 0', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-serve-'));
    try {
      const child = spawn(process.execPath, [BIN, 'serve', '--demo', '--data-dir', path.join(dir, 'data')], {
        env: { ...process.env, CURSOR_IPC_DIR: path.join(dir, 'ipc') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /Backchannel panel: (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64})/.exec(out);
          if (match) resolve(match[1]!);
        });
        child.on('exit', () => reject(new Error(`serve exited early: ${out}`)));
      });
      const { origin, searchParams } = new URL(url);
      const tasks = (await (
        await fetch(`${origin}/api/tasks`, { headers: { 'x-backchannel-token': searchParams.get('token')! } })
      ).json()) as { pid?: number; state: string }[];
      expect(tasks.length).toBeGreaterThanOrEqual(5);
      // Wait for some to run, then stop: their processes must be gone afterwards.
      let pids: number[] = [];
      for (let i = 0; i < 100 && pids.length === 0; i++) {
        const now = (await (
          await fetch(`${origin}/api/tasks`, { headers: { 'x-backchannel-token': searchParams.get('token')! } })
        ).json()) as { pid?: number; state: string }[];
        pids = now.filter((t) => t.state === 'running' && t.pid).map((t) => t.pid!);
        if (pids.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(pids.length).toBeGreaterThan(0);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      await waitUntilGone(pids);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
