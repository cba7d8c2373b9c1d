/**
 * Issue 23 item 9, real redis-server stopped and started again on the same port: an outage longer
 * than the job lock, during which the attempt succeeds on its worker. BullMQ fails the job as
 * stalled once Redis is back (the lock expired) and refuses the worker's completion; the broker
 * counted that as a crashed attempt: with retries the task ran twice, without it failed ("the
 * worker lost the job"). Now the worker keeps its report under its own key and the broker takes it.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, tempDir, waitFor, type TestBroker } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const AGENT = fleetFixture('counted-run.mjs');
const LOCK_MS = 1500;

describe.skipIf(REDIS_MISSING)(`a Redis outage longer than the job lock${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const workers: WorkerProcess[] = [];
  const brokers: TestBroker[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const b of brokers) await b.close().catch(() => {});
    for (const w of workers) await w.stop();
    await redis?.stop();
  });

  test.each([0, 1])(
    'an attempt that succeeds during the outage is delivered when Redis returns, and runs once (retries: %i)',
    async (retries) => {
      const queue = `q-${randomUUID().slice(0, 8)}`;
      const testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
      brokers.push(testBroker);
      const worker = await startWorker(redis.url, {
        queue,
        name: `${queue}-w`,
        allow: [`node ${AGENT}`],
        ipcDir: path.join(tempDir('bc-w-'), 'ipc'),
        lockTimeoutMs: LOCK_MS,
      });
      workers.push(worker);
      const runs = path.join(tempDir(), 'runs');
      const task = testBroker.broker.submit({ command: 'node', args: [AGENT], input: { runs, ms: 1500 }, retries });
      await waitFor(() => task.snapshot().worker, 'the task to be placed on the worker', 45_000, 50);
      // Down for four lock periods; the agent finishes meanwhile.
      await redis.restart(4 * LOCK_MS);
      const payload = await task.result;
      expect(payload).toMatchObject({ status: 'success', data: { done: true } });
      expect(task.snapshot()).toMatchObject({ state: 'succeeded', attempt: 1 });
      // Nothing ran twice, also not after a while.
      await new Promise((resolve) => setTimeout(resolve, 2 * LOCK_MS));
      expect(readFileSync(runs, 'utf8').trim().split('\n')).toHaveLength(1);
    },
    // A worker to start, an outage of 6 s, Redis to start again and BullMQ to see the stalled job:
    // 17 s a test at load average 27, more on a busier machine.
    120_000,
  );
});
