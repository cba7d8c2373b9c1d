/**
 * The figures of docs/scale-out.md (not part of `npm test`): tasks/s of the instant agent through
 * the local broker and through Redis with 1, 2 and 4 worker processes, and the Redis operations per
 * task. Run after `npm run build`: `npx tsx test/fleet/measure.ts [tasks]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TaskBroker } from '../../src/broker/index.js';
import { redisQueue } from '../../src/fleet/index.js';
import { startRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const TASKS = Number(process.argv[2] ?? 400);
const INSTANT = fleetFixture('instant.sh');
const PER_WORKER = 4;

async function run(broker: TaskBroker): Promise<number> {
  const start = performance.now();
  const handles = Array.from({ length: TASKS }, () => broker.submit({ command: INSTANT }));
  await Promise.all(handles.map((h) => h.result));
  return TASKS / ((performance.now() - start) / 1000);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-measure-'));
const redis = await startRedis();
try {
  const local = new TaskBroker({ concurrency: PER_WORKER, ipcDir: path.join(dir, 'local') });
  console.log(`local broker, concurrency ${PER_WORKER}: ${(await run(local)).toFixed(1)} tasks/s`);
  await local.close();
  for (const count of (process.argv[3] ?? '1,2,4').split(',').map(Number)) {
    const queue = `measure-${count}`;
    const workers: WorkerProcess[] = [];
    for (let i = 0; i < count; i++) {
      workers.push(
        await startWorker(redis.url, { queue, name: `w${i}`, allow: [INSTANT], concurrency: PER_WORKER, ipcDir: path.join(dir, 'ipc') }),
      );
    }
    const broker = new TaskBroker({ queue: redisQueue({ redis: redis.url, name: queue }), ipcDir: path.join(dir, 'b') });
    const info = async () => Number(/total_commands_processed:(\d+)/.exec(await redisInfo())![1]);
    const before = await info();
    const rate = await run(broker);
    const ops = ((await info()) - before) / TASKS;
    console.log(`redis, ${count} worker(s) × ${PER_WORKER}: ${rate.toFixed(1)} tasks/s, ${ops.toFixed(1)} Redis commands per task`);
    await broker.close();
    await Promise.all(workers.map((w) => w.stop()));
  }
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}

async function redisInfo(): Promise<string> {
  const { Redis } = await import('ioredis');
  const client = new Redis(redis.url);
  try {
    return await client.info('stats');
  } finally {
    client.disconnect();
  }
}
