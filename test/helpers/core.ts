/** Shared helpers for tests that run real brokers, processes and sockets. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { TaskBroker, type BrokerOptions } from '../../src/broker/index.js';
import { silentLogger } from '../../src/broker/log.js';

import { isAlive, killAgentsUnder } from './processes.js';
import { ANY_COMMAND } from './run-policy.js';

export { isAlive };

/** Waits until every pid is gone; rejects with the survivors after `timeoutMs`. */
export async function waitUntilGone(pids: number[], timeoutMs = 5000): Promise<void> {
  await waitFor(() => pids.every((pid) => !isAlive(pid)), `the end of ${pids.join(', ')}`, timeoutMs, 25).catch(() => {
    throw new Error(`still running after ${timeoutMs} ms: ${pids.filter(isAlive).join(', ')}`);
  });
}

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function fixture(name: string): string {
  return path.join(ROOT, 'test/fixtures', name);
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A short-named private temp dir, removed after the test. */
export function tempDir(prefix = 'bc-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface TestBroker {
  broker: TaskBroker;
  /** Its endpoint directory. */
  ipcDir: string;
  /** A scratch directory (the parent of ipcDir unless `ipcDir` was given), removed by close(). */
  dir: string;
  /** Closes the broker and removes the scratch directory (once). */
  close(): Promise<void>;
}

export interface TestBrokerOptions {
  /** `test`: closed and removed after the current test. `manual`: the caller calls close() (e.g. in afterAll). @default 'test' */
  scope?: 'test' | 'manual';
  /** Short cancel/kill/drain periods so failure tests run fast. @default true */
  shortGrace?: boolean;
}

/** The one test-broker factory: a silent TaskBroker in a private temporary directory. */
export function createTestBroker(options: BrokerOptions = {}, { scope = 'test', shortGrace = true }: TestBrokerOptions = {}): TestBroker {
  const dir = scope === 'test' ? tempDir() : mkdtempSync(path.join(os.tmpdir(), 'bc-'));
  const ipcDir = options.ipcDir ?? path.join(dir, 'ipc');
  const grace = shortGrace ? { cancelGraceMs: 200, killGraceMs: 200, drainMs: 300 } : {};
  const broker = new TaskBroker({ logger: silentLogger, runPolicy: ANY_COMMAND, ...grace, ...options, ipcDir });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      try {
        await broker.close();
      } finally {
        // A test that failed or timed out may leave agents the broker did not stop (a grandchild that ignores SIGTERM).
        killAgentsUnder(ipcDir);
        rmSync(dir, { recursive: true, force: true });
      }
    })());
  if (scope === 'test') cleanups.push(close);
  return { broker, ipcDir, dir, close };
}

/** A broker with its own endpoint directory and short grace periods, closed after the test. */
export function makeBroker(options: BrokerOptions = {}): { broker: TaskBroker; ipcDir: string } {
  const { broker, ipcDir } = createTestBroker(options);
  return { broker, ipcDir };
}

/** Files left in an endpoint directory (sockets, spool files). */
export function leftovers(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The one polling helper: calls `condition` (sync or async) every `intervalMs` until it returns a
 * truthy value, and resolves with that value; fails with `what` after `timeoutMs`. For waiting,
 * never for asserting speed.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
  intervalMs = 10,
): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Resolves with the settled result: the payload, or the TaskError. */
export async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: any }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
