/**
 * An ACP task on a worker fleet (real redis-server, a real `backchannel worker`): the job travels as
 * the agent's own command line, so the worker's allow-list judges the agent — never the adapter —
 * and the worker runs it under its own ACP adapter with the task's settings (docs/acp.md).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, ROOT, settle, tempDir, type TestBroker } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorker, type WorkerProcess } from '../fleet/workers.js';

const AGENT = path.join(ROOT, 'test/fixtures/acp/agent.mjs');
const OTHER = path.join(ROOT, 'test/fixtures/quick.mjs');

describe.skipIf(REDIS_MISSING)(`an ACP task on the fleet${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  let worker: WorkerProcess | undefined;
  let hub: TestBroker | undefined;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await hub?.close();
    await worker?.stop();
    await redis?.stop();
  }, 60_000);

  test('runs where the worker allows the agent, and is refused where it allows only another', async () => {
    const queue = `q-${randomUUID().slice(0, 8)}`;
    hub = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    worker = await startWorker(redis.url, { queue, name: `${queue}-w`, allow: [AGENT], ipcDir: path.join(tempDir('bc-w-'), 'ipc') });

    const ran = await settle(hub.broker.submit({ command: AGENT, acp: true, input: 'hi from the fleet' }).result);
    expect(ran.ok, ran.ok ? '' : String(ran.error)).toBe(true);
    if (ran.ok) {
      expect(ran.value.data).toMatchObject({ text: 'echo: hi from the fleet', stop_reason: 'end_turn' });
      expect(ran.value.meta).toMatchObject({ worker: `${queue}-w`, acp: { stop_reason: 'end_turn' } });
    }

    const refused = await settle(hub.broker.submit({ command: OTHER, acp: true, input: 'hi' }).result);
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.error.reason).toBe('refused');
      expect(refused.error.message).toContain(`refuses \`${OTHER}`);
    }
  });
});
