/**
 * Helpers for the fault-table tests (test/reliability): find every process a broker started (by its
 * hand-off environment, so forked grandchildren are found too), count open fds, capture log lines,
 * mount tiny file systems for the disk-fault rows, and hold the journal's fsyncs (durable-before-reported order).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, vi } from 'vitest';
import { Journal } from '../../src/broker/history/journal.js';
import type { Logger } from '../../src/broker/index.js';
import { fixture, leftovers, tempDir, waitFor } from './core.js';
import { agentProcesses } from './processes.js';

export function hostile(name: string): string {
  return fixture(path.join('hostile', name));
}

export { agentProcesses };

/**
 * From now on every fsync a journal is asked for waits for `release()` (the caller restores the spy,
 * `vi.restoreAllMocks()`): what a broker does before its records are durable is observed, not raced.
 */
export function holdFsyncs(): { release: () => void; held: () => number } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  const durable = Journal.prototype.durable;
  vi.spyOn(Journal.prototype, 'durable').mockImplementation(function (this: Journal) {
    held++;
    return Promise.all([durable.call(this), released]).then(() => undefined);
  });
  return { release, held: () => held };
}

/** Asserts that nothing a broker started is left: no process, no socket or spool file. */
export async function expectNothingLeft(ipcDir: string): Promise<void> {
  // Killed processes take a moment to be reaped; wait for that, then assert.
  await waitFor(() => agentProcesses(ipcDir).length === 0, 'the sub-agent processes to be gone', 10_000).catch(() => {});
  // A spool file taken goes once what was taken from it is durable (a moment after the task ends).
  await waitFor(() => leftovers(ipcDir).length === 0, 'the endpoint directory to be empty', 5_000).catch(() => {});
  expect(agentProcesses(ipcDir)).toEqual([]);
  expect(leftovers(ipcDir)).toEqual([]);
}

/** Open file descriptors of this process. */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

export interface CapturedLine {
  level: 'error' | 'warn' | 'info' | 'debug';
  text: string;
}

/** A Logger that keeps what it is told, for asserting on "one clear error". */
export function captureLogger(): Logger & { lines: CapturedLine[]; at(level: CapturedLine['level']): string[] } {
  const lines: CapturedLine[] = [];
  const put =
    (level: CapturedLine['level']) =>
    (...params: unknown[]) => {
      lines.push({ level, text: params.map((p) => (p instanceof Error ? p.message : String(p))).join(' ') });
    };
  return {
    lines,
    error: put('error'),
    warn: put('warn'),
    info: put('info'),
    debug: put('debug'),
    at: (level) => lines.filter((l) => l.level === level).map((l) => l.text),
  };
}

const mounts: string[] = [];
afterEach(() => {
  for (const dir of mounts.splice(0).reverse()) {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmdirSync(dir);
    } catch {
      // Already gone.
    }
  }
});

/** Why mounting is impossible here (not root, no CAP_SYS_ADMIN), or undefined when it works. */
export const cannotMount: string | undefined = (() => {
  if (process.platform !== 'linux') return 'tmpfs mounts need Linux';
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const probe = mkdtempSync(path.join(os.tmpdir(), 'bc-mnt-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `mount -t tmpfs failed here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
})();

/** Mounts a tmpfs of `size` (e.g. '64k') on a fresh directory; unmounted after the test. */
export function mountTmpfs(size: string): string {
  const dir = path.join(tempDir('bc-fs-'), 'mnt');
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

/** Makes a mounted file system read-only in place (what the kernel does after an I/O error). */
export function remountReadOnly(dir: string): void {
  execFileSync('mount', ['-o', 'remount,ro', dir]);
}
