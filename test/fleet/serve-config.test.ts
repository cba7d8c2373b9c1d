/**
 * `serve` takes its Redis queue from the `serve:` section of the one config file as it does from
 * `--redis`/`--queue` (real redis-server, a real worker). Skips with the reason where redis-server is missing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { waitFor } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { AGENT, scratchDir, startServe, type Serve } from '../e2e/serve.js';
import { startWorker, type WorkerProcess } from './workers.js';

const missing = REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : '';

describe('serve with a worker fleet from the config file', () => {
  let redis: TestRedis | undefined;
  let serve: Serve | undefined;
  let worker: WorkerProcess | undefined;
  afterAll(async () => {
    await serve?.stop();
    await worker?.stop();
    await redis?.stop();
  });

  test.skipIf(Boolean(REDIS_MISSING))(`serve: {redis, queue} in the config file sends tasks to the fleet${missing}`, async () => {
    const dir = scratchDir();
    redis = await startRedis();
    worker = await startWorker(redis.url, { queue: 'from-config', name: 'w-config', allow: [AGENT], ipcDir: path.join(dir, 'wipc') });
    const config = path.join(dir, 'config.yaml');
    // The run policy lets the panel's API start the demo agent with its own arguments (docs/run-policy.md).
    fs.writeFileSync(config, `serve:\n  redis: ${redis.url}\n  queue: from-config\nrun_policy:\n  allow:\n    - command: "*"\n`);
    serve = await startServe(path.join(dir, 'data'), [], { BACKCHANNEL_CONFIG: config });
    const id = await serve.submit('progress', ['--steps=2', '--interval=50']);
    const task = await waitFor(async () => {
      const { task } = await serve!.api<{ task: { state: string; worker?: string } }>('GET', `/api/tasks/${id}`);
      return task.state === 'succeeded' ? task : undefined;
    }, 'the task to succeed on the worker');
    expect(task.worker).toBe('w-config');
  });
});
