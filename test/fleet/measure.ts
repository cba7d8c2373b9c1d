/**
 * The figures of docs/scale-out.md (not part of `npm test`): tasks/s of the instant agent through
 * the local broker and through Redis with 1, 2 and 4 worker processes, the Redis commands per task,
 * and the latency of one task at a time (local vs one worker: the overhead Redis adds per task).
 * Run after `npm run build`: `npx tsx test/fleet/measure.ts [tasks] [worker counts, e.g. 1,2,4]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TaskBroker } from '../../src/broker/index.js';
import { redisQueue } from '../../src/fleet/index.js';
import { startRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const TASKS = Number(process.argv[2] ?? 300);
const COUNTS = (process.argv[3] ?? '1,2,4').split(',').map(Number);
const INSTANT = fleetFixture('instant.sh');
const PER_WORKER = 4;
/** Tasks run one after the other for the latency figure. */
const SEQUENTIAL = 50;

/** Tasks per second with TASKS submitted at once. */
async function throughput(broker: TaskBroker): Promise<number> {
  const start = performance.now();
  await Promise.all(Array.from({ length: TASKS }, () => broker.submit({ command: INSTANT }).result));
  return TASKS / ((performance.now() - start) / 1000);
}

/** Median milliseconds from submit to result, one task at a time. */
async function latency(broker: TaskBroker): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const start = performance.now();
    await broker.submit({ command: INSTANT }).result;
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

async function redisCommands(url: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url);
  try {
    return Number(/total_commands_processed:(\d+)/.exec(await client.info('stats'))![1]);
  } finally {
    client.disconnect();
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-measure-'));
const redis = await startRedis();
try {
  const local = new TaskBroker({ concurrency: PER_WORKER, ipcDir: path.join(dir, 'local') });
  console.log(`local broker, concurrency ${PER_WORKER}: ${(await throughput(local)).toFixed(1)} tasks/s`);
  console.log(`local broker, one task at a time: median ${(await latency(local)).toFixed(1)} ms`);
  await local.close();
  for (const count of COUNTS) {
    const queue = `measure-${count}`;
    const workers: WorkerProcess[] = [];
    for (let i = 0; i < count; i++) {
      const ipcDir = path.join(dir, 'ipc');
      workers.push(await startWorker(redis.url, { queue, name: `w${i}`, allow: [INSTANT], concurrency: PER_WORKER, ipcDir }));
    }
    const broker = new TaskBroker({ queue: redisQueue({ redis: redis.url, name: queue }), ipcDir: path.join(dir, 'b') });
    const before = await redisCommands(redis.url);
    const rate = await throughput(broker);
    const perTask = ((await redisCommands(redis.url)) - before) / TASKS;
    console.log(`redis, ${count} worker(s) × ${PER_WORKER}: ${rate.toFixed(1)} tasks/s, ${perTask.toFixed(1)} Redis commands per task`);
    if (count === 1) console.log(`redis, one task at a time: median ${(await latency(broker)).toFixed(1)} ms`);
    await broker.close();
    await Promise.all(workers.map((w) => w.stop()));
  }
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
