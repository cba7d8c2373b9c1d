import { describe, expect, test } from 'vitest';
import { fixture, leftovers, makeBroker, settle } from '../helpers/core.js';

/** Tasks through a cap of 20: 60 (three waves) in `npm test`, 200 in `npm run test:long` (BACKCHANNEL_CONCURRENCY_TASKS). */
const TASKS = Number(process.env.BACKCHANNEL_CONCURRENCY_TASKS ?? 60);

describe('concurrency', () => {
  test(`${TASKS} tasks at concurrency 20: every result arrives once, never more than 20 run, no socket file left`, async () => {
    const { broker, ipcDir } = makeBroker({ concurrency: 20 });
    let running = 0;
    let peak = 0;
    broker.on('update', (u) => {
      if (u.kind === 'started') peak = Math.max(peak, ++running);
      if (u.kind === 'ended') running -= 1;
    });
    const tasks = Array.from({ length: TASKS }, (_, n) => broker.submit({ command: fixture('quick.mjs'), input: { n } }));
    const results = await Promise.all(tasks.map((t) => t.result));
    expect(results.map((r) => (r.data as { n: number }).n)).toEqual(Array.from({ length: TASKS }, (_, n) => n));
    expect(new Set(results.map((r) => r.task_id)).size).toBe(TASKS);
    expect(peak).toBeLessThanOrEqual(20);
    await broker.onIdle();
    expect(broker.tasks().filter((t) => t.state === 'succeeded')).toHaveLength(TASKS);
    expect(leftovers(ipcDir)).toEqual([]);
    // 200 Node start-ups (test:long) on 2 cores: a busy CI machine needs more than the default minute.
  }, 240_000);

  test('close() cancels running tasks and removes every endpoint', async () => {
    const { broker, ipcDir } = makeBroker({ concurrency: 4 });
    const tasks = Array.from({ length: 6 }, () => broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'] }));
    await new Promise<void>((resolve) => {
      let started = 0;
      broker.on('update', (u) => u.kind === 'partial' && ++started === 4 && resolve());
    });
    await broker.close();
    const reasons = await Promise.all(
      tasks.map((t) =>
        t.result.then(
          () => 'ok',
          (e) => e.reason,
        ),
      ),
    );
    expect(reasons).toEqual(Array(6).fill('cancelled'));
    expect(leftovers(ipcDir)).toEqual([]);
    expect(() => broker.submit({ command: 'x' })).toThrow(/closed/);
  });

  test('close() while an attempt already decided for a retry is still stopping: no next attempt, no wait for the backoff', async () => {
    const { broker } = makeBroker();
    // Times out (retryable), ignores the cancel and SIGTERM: its attempt takes the cancel and kill graces to end.
    const task = broker.submit({
      command: fixture('stubborn.mjs'),
      args: ['chatty'],
      timeoutMs: 500,
      retries: { max: 1, backoffMs: 600_000 },
    });
    await new Promise<void>((resolve) =>
      task.on('update', (u) => u.kind === 'log' && u.line?.text.startsWith('stopping: timed out') && resolve()),
    );
    await broker.close();
    expect(await settle(task.result)).toMatchObject({ ok: false, error: { reason: 'cancelled' } });
    expect(task.snapshot()).toMatchObject({ state: 'cancelled', attempt: 1 });
  });
});
