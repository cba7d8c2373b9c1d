/**
 * Tasks through Redis to real `backchannel worker` processes and back (real redis-server): partials
 * in order and whole results, 150 tasks over 3 workers (500 in `npm run test:long`), ask/answer,
 * cancel, refusal, a worker killed mid-task and Redis restarted mid-run.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TaskBroker } from '../../src/broker/index.js';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, fixture, settle, tempDir, waitFor, waitUntilGone, type TestBroker } from '../helpers/core.js';
import { isAlive } from '../helpers/processes.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { fleetFixture, startWorker, type StartWorkerOptions, type WorkerProcess } from './workers.js';

const STEPS = fleetFixture('steps.mjs');
const UNTIL_CANCELLED = fleetFixture('until-cancelled.mjs');
const ASKER = fixture('asker.mjs');
const INSTANT = fleetFixture('instant.sh');
const KEEPS_WORK = fixture('keeps-work.mjs');
/** Tasks over 3 workers: 150 in `npm test`, 500 in `npm run test:long` (BACKCHANNEL_FLEET_TASKS). */
const SHARE_TASKS = Number(process.env.BACKCHANNEL_FLEET_TASKS ?? 150);
const ALLOWED = [STEPS, UNTIL_CANCELLED, ASKER, INSTANT, KEEPS_WORK];

describe.skipIf(REDIS_MISSING)(`the Redis fleet${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const workers: WorkerProcess[] = [];
  const brokers: TestBroker[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  // Each broker's close waits (bounded) for its workers to confirm stops; on a loaded machine the
  // brokers of eight tests closed one after another outlasted the default 60 s hook limit.
  afterAll(async () => {
    await Promise.all(brokers.map((b, i) => closeOrSay(b, i)));
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
  }, 150_000);

  /**
   * Closes one test's broker. Every assertion has run by now; a close that does not finish is an open
   * bug (a fleet broker's close rarely hangs when other suites run beside this one): say so, with the
   * tasks it still holds, instead of failing the suite on teardown.
   */
  async function closeOrSay(b: TestBroker, i: number): Promise<void> {
    const closed = b.close().then(() => true);
    const late = new Promise<false>((resolve) => setTimeout(() => resolve(false), 30_000).unref());
    if (await Promise.race([closed, late])) return;
    const held = b.broker.tasks().map((t) => `${t.label}: ${t.state}${t.worker ? ` on ${t.worker}` : ''}`);
    console.warn(`fleet broker ${i} did not close within 30 s; it still holds: ${held.join('; ') || 'no tasks'}`);
  }

  /** A broker on a fresh queue, and `count` workers serving it. */
  async function fleet(
    count: number,
    options: Partial<StartWorkerOptions> = {},
  ): Promise<{ broker: TaskBroker; workers: WorkerProcess[] }> {
    const queue = `q-${randomUUID().slice(0, 8)}`;
    const testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    brokers.push(testBroker);
    const ipcDir = path.join(tempDir('bc-w-'), 'ipc');
    const started = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        startWorker(redis.url, { queue, name: `${queue}-w${i + 1}`, allow: ALLOWED, ipcDir, concurrency: 4, ...options }),
      ),
    );
    workers.push(...started);
    return { broker: testBroker.broker, workers: started };
  }

  test('a task runs on a worker and comes back with its partials in order and a 10 MB result intact', async () => {
    const {
      broker,
      workers: [worker],
    } = await fleet(1);
    const input = { steps: 30, bytes: 10 * 1024 * 1024, note: 'grüße 🙂' };
    const task = broker.submit({ command: STEPS, input });
    const progress: number[] = [];
    task.on('update', (u) => u.kind === 'partial' && progress.push(u.progress!));
    const payload = await task.result;
    const data = payload.data as { echo: unknown; text: string };
    expect(data.echo).toEqual(input);
    expect(data.text.length).toBe(input.bytes);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(payload.meta).toMatchObject({ worker: worker!.name, attempts: 1 });
    expect(task.snapshot().worker).toBe(worker!.name);
    expect((await broker.fleet()).map((w) => w.name)).toEqual([worker!.name]);
  });

  test(`${SHARE_TASKS} tasks over 3 workers: every result arrives once, and every worker takes a share`, async () => {
    const { broker, workers: three } = await fleet(3);
    const tasks = Array.from({ length: SHARE_TASKS }, () => broker.submit({ command: INSTANT }));
    const results = await Promise.all(tasks.map((t) => t.result));
    expect(results.map((r) => (r.data as { id: string }).id)).toEqual(tasks.map((t) => t.id));
    const perWorker = new Map<string, number>();
    for (const t of tasks) perWorker.set(t.snapshot().worker!, (perWorker.get(t.snapshot().worker!) ?? 0) + 1);
    expect([...perWorker.keys()].sort()).toEqual(three.map((w) => w.name).sort());
    expect(tasks.every((t) => t.snapshot().attempt === 1)).toBe(true);
  });

  test('a question is answered across the fleet', async () => {
    const { broker } = await fleet(1);
    const task = broker.submit({ command: ASKER });
    const asked = await waitFor(() => task.snapshot().pendingQuestion, 'the question');
    expect(asked.question).toBe('Which branch should I use?');
    expect(broker.answer(task.id, asked.askId, 'dev')).toBe(true);
    expect((await task.result).data).toEqual({ answer: 'dev' });
  });

  test('a task stopped at its deadline on a worker keeps its last partial and its answer to the stop (issue 47 §2)', async () => {
    const { broker } = await fleet(1);
    const task = broker.submit({ command: KEEPS_WORK, timeoutMs: 2000 });
    const outcome = await settle(task.result);
    expect(outcome.ok === false && outcome.error.reason).toBe('timeout');
    const error = outcome.ok ? undefined : outcome.error;
    expect(error.partialResult).toMatchObject({
      data: { step: 'drafted', text: 'half a report' },
      answer: { status: 'cancelled' },
      attachments: [{ name: 'draft.md' }],
    });
    await task.finished;
  });

  test('cancel reaches the remote worker and kills the sub-agent with its grandchild', async () => {
    const { broker } = await fleet(1);
    const task = broker.submit({ command: UNTIL_CANCELLED });
    const started = await waitFor(() => task.snapshot().lastPartial as { pid: number; grandchild: number } | undefined, 'the pids');
    expect(isAlive(started.pid) && isAlive(started.grandchild)).toBe(true);
    task.cancel('enough');
    const outcome = await settle(task.result);
    expect(outcome.ok === false && outcome.error.reason).toBe('cancelled');
    await waitUntilGone([started.pid, started.grandchild]);
  });

  test('a worker refuses a command it was not given, and says how to allow it', async () => {
    const { broker } = await fleet(1);
    const task = broker.submit({ command: 'sh', args: ['-c', 'echo pwned'] });
    const outcome = await settle(task.result);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok === false && outcome.error.message).toMatch(/refuses `sh -c echo pwned`: not an allowed command.*--allow/);
  });

  test('a worker SIGKILLed mid-task: the job is detected as stalled and the attempt runs again on another worker', async () => {
    const { broker, workers: two } = await fleet(2, { lockTimeoutMs: 1000 });
    const task = broker.submit({ command: STEPS, input: { steps: 15, stepMs: 100 }, retries: { max: 1, backoffMs: 10 } });
    const first = await waitFor(() => task.snapshot().worker, 'a worker to take the task');
    const orphan = await waitFor(() => task.snapshot().progress !== undefined && task.snapshot().lastPartial, 'a partial');
    expect(orphan).toBeDefined();
    two.find((w) => w.name === first)!.child.kill('SIGKILL');
    const payload = await task.result;
    // The same attempt, run again once on the other worker (test/fleet/worker-death.test.ts): its retry is left.
    expect(payload.meta).toMatchObject({ attempts: 1 });
    expect(payload.meta!.worker).not.toBe(first);
    expect(task.snapshot().worker).not.toBe(first);
    await waitUntilGone([(payload.data as { pid: number }).pid]);
  });

  test('a worker stopped with SIGTERM mid-task cancels its sub-agent, and the task is retried on another worker', async () => {
    const { broker, workers: two } = await fleet(2);
    const task = broker.submit({ command: UNTIL_CANCELLED, retries: { max: 1, backoffMs: 10 } });
    const first = await waitFor(() => task.snapshot().lastPartial && task.snapshot().worker, 'the first attempt to run');
    const pids = task.snapshot().lastPartial as { pid: number; grandchild: number };
    await two.find((w) => w.name === first)!.stop();
    await waitUntilGone([pids.pid, pids.grandchild]);
    const second = await waitFor(() => task.snapshot().attempt === 2 && task.snapshot().lastPartial && task.snapshot().worker, 'a retry');
    expect(second).not.toBe(first);
    expect(task.snapshot().state).toBe('running');
    task.cancel();
    expect((await settle(task.result)).ok).toBe(false);
  });

  test('Redis restarted mid-run: broker and workers reconnect and every task finishes', async () => {
    const { broker } = await fleet(2);
    const tasks = Array.from({ length: 8 }, (_, n) => broker.submit({ command: STEPS, input: { steps: 4, stepMs: 150, n } }));
    await waitFor(() => tasks.some((t) => t.snapshot().state === 'running' && t.snapshot().worker), 'a task to run');
    await redis.restart();
    const results = await Promise.all(tasks.map((t) => settle(t.result)));
    // A failed task shows its reason in the comparison, not `false`.
    expect(results.map((r) => (r.ok ? (r.value.data as { echo: { n: number } }).echo.n : String(r.error)))).toEqual(tasks.map((_, n) => n));
  });
});
