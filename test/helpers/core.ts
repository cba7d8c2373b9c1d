/** Shared helpers for tests that run real brokers, processes and sockets. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { TaskBroker, type BrokerOptions } from '../../src/broker/index.js';
import { silentLogger } from '../../src/broker/log.js';

export { isAlive, waitUntilGone } from './processes.js';

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

/** A broker with its own endpoint directory and short grace periods, closed after the test. */
export function makeBroker(options: BrokerOptions = {}): { broker: TaskBroker; ipcDir: string } {
  const ipcDir = options.ipcDir ?? path.join(tempDir(), 'ipc');
  const broker = new TaskBroker({ logger: silentLogger, cancelGraceMs: 200, killGraceMs: 200, drainMs: 300, ...options, ipcDir });
  cleanups.push(() => broker.close());
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

/** Polls `condition` until it holds; fails with `what` after `timeoutMs`. For waiting, never for asserting speed. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
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
