/** `backchannel serve` as a command: usage, and a clean stop that cancels what runs. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { writeHistory } from '../../bench/lib/history.js';
import { isAlive, ROOT, waitFor, waitUntilGone } from '../helpers/core.js';

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

  test('a bad --history-limit is a usage error (exit 2) that names the option', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve', '--history-limit', '0'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Expected `--history-limit` to be a positive integer, got `0`');
  });

  test('a bad --agent-cpu is a usage error (exit 2) that names the choices', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve', '--agent-cpu', 'fast'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Expected `--agent-cpu` to be shared or full, got `fast`');
  });

  test('--history-limit keeps that many of the newest finished tasks', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-serve-'));
    const dataDir = path.join(dir, 'data');
    const ids: string[] = writeHistory(dataDir, { count: 5 });
    const child = spawn(process.execPath, [BIN, 'serve', '--history-limit', '3', '--data-dir', dataDir], {
      env: { ...process.env, CURSOR_IPC_DIR: path.join(dir, 'ipc') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await waitFor(() => /Backchannel panel: \S+/.test(out) || child.exitCode !== null, 'serve to print the panel URL', 30_000);
      const { origin, searchParams } = new URL(/Backchannel panel: (\S+)/.exec(out)![1]!);
      const res = await fetch(`${origin}/api/tasks`, { headers: { 'x-backchannel-token': searchParams.get('token')! } });
      const tasks = (await res.json()) as { id: string }[];
      expect(tasks.map((t) => t.id)).toEqual(ids.slice(2));
    } finally {
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('prints the panel URL, starts demo tasks (tagged demo, counted by no stats) on an empty history, and Ctrl+C stops them and exits 0', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-serve-'));
    let started: ChildProcess | undefined;
    try {
      const child = spawn(process.execPath, [BIN, 'serve', '--demo', '--data-dir', path.join(dir, 'data')], {
        env: { ...process.env, CURSOR_IPC_DIR: path.join(dir, 'ipc') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      started = child;
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const panel = () => /Backchannel panel: (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64})/.exec(out)?.[1];
      await waitFor(() => panel() !== undefined || child.exitCode !== null, 'serve to print the panel URL', 30_000);
      expect(panel(), `serve exited early: ${out}${err}`).toBeDefined();
      const { origin, searchParams } = new URL(panel()!);
      const listTasks = async () =>
        (await (await fetch(`${origin}/api/tasks`, { headers: { 'x-backchannel-token': searchParams.get('token')! } })).json()) as {
          pid?: number;
          state: string;
          tags?: Record<string, string>;
        }[];
      const demos = await listTasks();
      expect(demos.length).toBeGreaterThanOrEqual(5);
      // Marked as demo tasks, so they never count among the user's own agents (below: stats).
      expect(demos.map((t) => t.tags?.demo)).toEqual(demos.map(() => 'true'));

      // Wait for some to run (one listing in flight at a time), then stop: their processes must be gone afterwards.
      let pids: number[] = [];
      let listing: Promise<void> | undefined;
      await waitFor(
        () => {
          listing ??= listTasks()
            .then((tasks) => {
              pids = tasks.filter((t) => t.state === 'running' && t.pid).map((t) => t.pid!);
            })
            .finally(() => (listing = undefined));
          return pids.length > 0;
        },
        'a demo task to run',
        30_000,
      );
      await listing?.catch(() => {});
      child.kill('SIGINT');
      // Bounded, so a hang says which phase it was in (and what serve printed) instead of timing the test out.
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, 'serve to stop after SIGINT', 30_000).catch(
        (error: Error) => {
          const log = fs.readFileSync(path.join(dir, 'data/logs/backchannel.log'), 'utf8').split('\n').slice(-30).join('\n');
          const alive = pids.filter((pid) => isAlive(pid));
          throw new Error(
            `${error.message}; serve printed: ${out}${err}\nagents still alive: ${alive.join(', ') || 'none'}\nlog tail:\n${log}`,
          );
        },
      );
      expect(await exited).toBe(0);
      await waitUntilGone(pids);
      // Every demo task has ended (the running ones cancelled), and stats counts none of them.
      const stats = spawnSync(process.execPath, [BIN, 'stats', '--json', '--data-dir', path.join(dir, 'data')], { encoding: 'utf8' });
      expect(stats.stderr).toBe('');
      expect((JSON.parse(stats.stdout) as { total: { count: number } }).total.count).toBe(0);
    } finally {
      // A failed assertion must not leave serve (and its forever-running demo tasks) behind.
      if (started && started.exitCode === null && started.signalCode === null) started.kill('SIGINT');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
