/**
 * Fault table, issue 47 item 1 (a fleet worker's death): a worker SIGKILLed in mid-run. Its agents
 * die with it (its keeper stops them: none runs on unwatched), and what they had not finished runs
 * again on another worker, once — the tasks succeed without any retry configured, and no task runs
 * more than twice or twice at once. An agent that finished as its worker died spools its result, and
 * the worker that comes back on the same endpoint directory hands it over: it does not run again.
 * Real redis-server, real `backchannel worker` processes.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, tempDir, waitFor, waitUntilGone, type TestBroker } from '../helpers/core.js';
import { isAlive } from '../helpers/processes.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const LONG = fleetFixture('long-steps.mjs');
const ORPHANED = fleetFixture('finishes-orphaned.mjs');

describe.skipIf(REDIS_MISSING)(`a fleet worker's death${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const workers: WorkerProcess[] = [];
  let testBroker: TestBroker | undefined;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await testBroker?.close();
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
  }, 90_000);

  test('a worker SIGKILLed mid-run: its agents die with it, and each unfinished task runs again on another worker, once', async () => {
    const queue = `q-${randomUUID().slice(0, 8)}`;
    testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    const { broker } = testBroker;
    const dir = tempDir('bc-wd-');
    const ipcDir = path.join(dir, 'ipc');
    const runs = path.join(dir, 'runs.txt');
    writeFileSync(runs, '');
    const options = { queue, allow: [LONG], ipcDir, concurrency: 3, lockTimeoutMs: 1000 };
    workers.push(...(await Promise.all([1, 2].map((n) => startWorker(redis.url, { ...options, name: `${queue}-w${n}` })))));
    // 40 steps of 200 ms: 8 s of work the first time, far longer than the test waits for the agents to go.
    const tasks = Array.from({ length: 6 }, (_, n) => broker.submit({ command: LONG, input: { nonce: `t${n}`, runs, steps: 40 } }));
    const placed = await waitFor(
      () => tasks.every((t) => t.snapshot().worker && (t.snapshot().lastPartial as { pid?: number } | undefined)?.pid) && tasks,
      'all six tasks running on the two workers',
      60_000,
    );
    const victim = workers.find((w) => w.name === placed[0]!.snapshot().worker)!;
    const onVictim = placed.filter((t) => t.snapshot().worker === victim.name);
    const orphans = onVictim.map((t) => (t.snapshot().lastPartial as { pid: number }).pid);
    victim.child.kill('SIGKILL');

    // Stopped with their worker (SIGTERM, SIGKILL a second later), not left to work on for 8 s.
    await waitUntilGone(orphans, 4_000);
    const payloads = await Promise.all(tasks.map((t) => t.result));
    const survivor = workers.find((w) => w !== victim)!.name;
    for (const [n, task] of tasks.entries()) {
      expect(payloads[n]!.data).toMatchObject({ nonce: `t${n}` });
      expect(payloads[n]!.meta).toMatchObject({ attempts: 1 });
      if (onVictim.includes(task)) {
        expect(payloads[n]!.meta!.worker).toBe(survivor);
        expect(broker.logOf(task.id).map((l) => l.text)).toContainEqual(
          expect.stringMatching(
            new RegExp(`^the worker ${victim.name} lost the job: .*; the attempt runs again on another worker \\(once\\)$`),
          ),
        );
      }
    }
    // Each task ran once, or (the dead worker's) twice: never more, never twice at once.
    const ran = new Map<string, number>();
    for (const line of readFileSync(runs, 'utf8').split('\n').filter(Boolean)) {
      const nonce = line.split(' ')[0]!;
      ran.set(nonce, (ran.get(nonce) ?? 0) + 1);
    }
    const expected = new Map(tasks.map((t, n) => [`t${n}`, onVictim.includes(t) ? 2 : 1]));
    expect(Object.fromEntries(ran)).toEqual(Object.fromEntries(expected));
    expect(orphans.filter(isAlive)).toEqual([]);
  }, 120_000);

  test('an agent that finishes as its worker dies spools its result; the worker started again in its place hands it over, and it does not run again', async () => {
    const queue = `q-${randomUUID().slice(0, 8)}`;
    const own = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    const dir = tempDir('bc-wd-');
    const ipcDir = path.join(dir, 'ipc');
    const runs = path.join(dir, 'runs.txt');
    writeFileSync(runs, '');
    const options = { queue, allow: [ORPHANED], ipcDir, lockTimeoutMs: 1000 };
    const first = await startWorker(redis.url, { ...options, name: `${queue}-w1` });
    workers.push(first);
    try {
      const task = own.broker.submit({ command: ORPHANED, input: { runs } });
      const { pid } = await waitFor(() => task.snapshot().lastPartial as { pid: number } | undefined, 'the agent to work');
      first.child.kill('SIGKILL');
      await waitUntilGone([pid], 4_000);
      // Its worker comes back (a restart, on the same machine and endpoint directory).
      const again = await startWorker(redis.url, { ...options, name: `${queue}-w2` });
      workers.push(again);
      const payload = await task.result;
      expect(payload).toMatchObject({ data: { run: 'first' }, meta: { worker: again.name, attempts: 1, channel: 'spool' } });
      expect(readFileSync(runs, 'utf8').trim().split('\n')).toEqual([String(pid)]);
    } finally {
      await own.close();
    }
  }, 120_000);
});
