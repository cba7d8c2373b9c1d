/**
 * The partial-delivery contract through the Redis fleet (real redis-server, real `backchannel worker`):
 * every partial that carries more than progress reaches the broker whole and in order, however fast
 * the agent sends; only progress-only partials in a row may be coalesced, and the last one arrives.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TaskBroker } from '../../src/broker/index.js';
import type { TaskUpdate } from '../../src/model/task.js';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, type TestBroker } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const DELTAS = fleetFixture('deltas.mjs');

interface Received {
  delta?: string;
  progress?: number;
  message?: string;
}

describe.skipIf(REDIS_MISSING)(`partials through the Redis fleet${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let testBroker: TestBroker;
  let broker: TaskBroker;
  let workerDir: string;

  beforeAll(async () => {
    redis = await startRedis();
    const queue = `q-${randomUUID().slice(0, 8)}`;
    testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    broker = testBroker.broker;
    // The worker outlives each test, so its endpoint directory does too (tempDir() goes after each test).
    workerDir = mkdtempSync(path.join(os.tmpdir(), 'bc-w-'));
    const ipcDir = path.join(workerDir, 'ipc');
    worker = await startWorker(redis.url, { queue, name: `${queue}-w1`, allow: [DELTAS], ipcDir, concurrency: 2 });
  }, 60_000);

  afterAll(async () => {
    await testBroker?.close();
    await worker?.stop();
    await redis?.stop();
    if (workerDir) rmSync(workerDir, { recursive: true, force: true });
  }, 60_000);

  /** Runs the fixture and returns its result text and every partial's data the broker received, in order. */
  async function run(input: { count: number; every?: number; steps?: number }): Promise<{ text: string; received: Received[] }> {
    const task = broker.submit({ command: DELTAS, input });
    const received: Received[] = [];
    task.on('update', (u: TaskUpdate) => u.kind === 'partial' && received.push(u.payload!.data as Received));
    const payload = await task.result;
    return { text: (payload.data as { text: string }).text, received };
  }

  test('2,000 text deltas sent as fast as the agent can: every one arrives, in order, and the text is whole', async () => {
    const count = 2000;
    const { text, received } = await run({ count });
    const deltas = received.map((d) => d.delta);
    const lost = count - deltas.length;
    expect(lost, `${lost} of ${count} deltas lost or merged`).toBe(0);
    expect(deltas).toEqual(Array.from({ length: count }, (_, i) => expect.stringMatching(new RegExp(`^${i}(\\D|$)`, 'u'))));
    expect(deltas.join('')).toBe(text);
  }, 60_000);

  test('progress-only partials may be coalesced, never across a delta, and the last progress arrives', async () => {
    const count = 1000;
    const steps = 500;
    const { text, received } = await run({ count, every: 100, steps });
    const deltas = received.filter((d) => d.delta !== undefined).map((d) => d.delta);
    expect(deltas.length).toBe(count);
    expect(deltas.join('')).toBe(text);
    // Each progress partial arrives after exactly the deltas the agent sent before it.
    let before = 0;
    const progress: number[] = [];
    for (const d of received) {
      if (d.delta !== undefined) before++;
      else {
        expect(Number(d.message)).toBe(before);
        progress.push(d.progress!);
      }
    }
    // The nine between deltas cannot be merged; of the 501 in a row (the tenth and the steps), at least the last arrives.
    expect(progress.length).toBeGreaterThanOrEqual(9 + 1);
    expect(progress.length).toBeLessThanOrEqual(10 + steps);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(100);
    expect(received.at(-1)).toEqual({ progress: 100, message: `${count}` });
  }, 60_000);
});
