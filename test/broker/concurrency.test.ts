import { describe, expect, test } from 'vitest';
import { fixture, leftovers, makeBroker } from '../helpers/core.js';

describe('concurrency', () => {
  test('200 tasks at concurrency 20: every result arrives once, never more than 20 run, no socket file left', async () => {
    const { broker, ipcDir } = makeBroker({ concurrency: 20 });
    let running = 0;
    let peak = 0;
    broker.on('update', (u) => {
      if (u.kind === 'started') peak = Math.max(peak, ++running);
      if (u.kind === 'ended') running -= 1;
    });
    const tasks = Array.from({ length: 200 }, (_, n) => broker.submit({ command: fixture('quick.mjs'), input: { n } }));
    const results = await Promise.all(tasks.map((t) => t.result));
    expect(results.map((r) => (r.data as { n: number }).n)).toEqual(Array.from({ length: 200 }, (_, n) => n));
    expect(new Set(results.map((r) => r.task_id)).size).toBe(200);
    expect(peak).toBeLessThanOrEqual(20);
    await broker.onIdle();
    expect(broker.tasks().filter((t) => t.state === 'succeeded')).toHaveLength(200);
    expect(leftovers(ipcDir)).toEqual([]);
    // 200 Node start-ups on 2 cores: a busy CI machine needs more than the default minute.
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
});
