import { describe, expect, test } from 'vitest';
import type { TaskError, TaskHandle } from '../../src/broker/index.js';
import { fixture, leftovers, makeBroker, settle, waitFor, waitUntilGone, isAlive } from '../helpers/core.js';
import { FakeClock } from '../helpers/fake-clock.js';

/**
 * The pids a stubborn fixture reports in its first partial (itself and its grandchild). Fails instead
 * of hanging if the task ends first (e.g. a watchdog fired before the fixture got going).
 */
function pidsOf(task: TaskHandle): Promise<number[]> {
  return new Promise((resolve, reject) => {
    task.result.then(
      () => reject(new Error('task ended before reporting its pids')),
      (error) => reject(new Error(`task ended before reporting its pids: ${error.message}`)),
    );
    const off = task.on('update', (u) => {
      const pids = (u.payload?.data as { pids?: number[] } | undefined)?.pids;
      if (u.kind === 'partial' && pids) {
        off();
        resolve(pids);
      }
    });
  });
}

/** Holds this process's event loop for `ms`, as a saturated machine or a long GC pause would. */
function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // Busy: nothing else of this process runs.
  }
}

async function expectTreeGone(task: TaskHandle, pids: number[], ipcDir: string): Promise<void> {
  await task.finished;
  await waitUntilGone(pids);
  expect(pids.filter(isAlive)).toEqual([]);
  expect(leftovers(ipcDir)).toEqual([]);
}

describe('guards', () => {
  test('timeout kills an agent that ignores cancel, and its grandchild', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['chatty'], timeoutMs: 1500, heartbeatTimeoutMs: 60_000 });
    const pids = await pidsOf(task);
    const outcome = await settle(task.result);
    const error = (outcome as { error: TaskError }).error;
    expect(error.reason).toBe('timeout');
    expect(error.message).toContain('timed out after 1500 ms');
    await expectTreeGone(task, pids, ipcDir);
    expect(task.snapshot().signal).toBe('SIGKILL');
  });

  test('the heartbeat watchdog fails a silent agent as stalled and kills its tree', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'], heartbeatTimeoutMs: 2500 });
    const pids = await pidsOf(task);
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('stalled');
    expect(error.message).toContain('no message for 2500 ms');
    await expectTreeGone(task, pids, ipcDir);
  });

  // The event loop runs timers before it reads sockets: after this process stalls (a saturated
  // machine, a long GC), a watchdog that came due must not beat the lines already waiting for it.
  test('after this process stalls, heartbeats already received keep the watchdog quiet', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['chatty'], heartbeatTimeoutMs: 600 });
    const pids = await pidsOf(task);
    let stalled: string | undefined;
    void task.result.catch((error: TaskError) => (stalled = error.reason));
    // The agent beats every 20 ms while this process is stalled three watchdog periods. The period is
    // 600 ms so that a loaded machine's scheduler cannot starve the agent itself for a whole period.
    blockFor(1800);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect({ state: task.snapshot().state, stalled }).toEqual({ state: 'running', stalled: undefined });
    task.cancel();
    await expectTreeGone(task, pids, ipcDir);
    expect(task.snapshot().state).toBe('cancelled');
  });

  test('after this process stalls past the deadline, a result that came in time stands', async () => {
    const { broker, ipcDir } = makeBroker();
    const submitted = Date.now();
    const task = broker.submit({ command: fixture('ready-then-done.mjs'), args: ['100'], timeoutMs: 2000 });
    await new Promise<void>((resolve) => {
      const off = task.on('update', (u) => {
        if (u.kind === 'partial') {
          off();
          resolve();
        }
      });
    });
    // The agent succeeds 100 ms into the stall; the deadline comes due during it.
    const readyAt = Date.now() - submitted;
    expect(readyAt).toBeLessThan(1500);
    blockFor(2000 - readyAt + 500);
    const result = await settle(task.result);
    expect(result).toMatchObject({ ok: true, value: { status: 'success', data: { done: true } } });
    await task.finished;
    expect(leftovers(ipcDir)).toEqual([]);
  });

  test('cancel kills an agent that ignores it, and its grandchild', async () => {
    const { broker, ipcDir } = makeBroker();
    const controller = new AbortController();
    const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'], signal: controller.signal });
    const pids = await pidsOf(task);
    controller.abort();
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('cancelled');
    expect(task.snapshot().state).toBe('cancelled');
    await expectTreeGone(task, pids, ipcDir);
  });

  test('cancelling a queued task ends it at once without starting it', async () => {
    const { broker } = makeBroker({ concurrency: 1 });
    const blocker = broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'] });
    const queued = broker.submit({ command: fixture('quick.mjs') });
    expect(queued.snapshot().state).toBe('queued');
    queued.cancel('not needed');
    const error = ((await settle(queued.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('cancelled');
    expect(queued.snapshot().attempt).toBe(0);
    blocker.cancel();
    await settle(blocker.result);
  });
});

describe('retries', () => {
  test('an error payload is retried and attempt 2 succeeds', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('flaky.mjs'), args: ['error'], retries: { max: 2, backoffMs: 50, factor: 2 } });
    const states: string[] = [];
    task.on('update', (u) => u.kind !== 'log' && u.kind !== 'partial' && states.push(`${u.kind}:${u.attempt}`));
    const result = await task.result;
    expect(result.data).toEqual({ attempt: 2 });
    expect(result.meta?.attempts).toBe(2);
    expect(states).toEqual(['started:1', 'retrying:1', 'started:2', 'ended:2']);
  });

  test('a crash is retried too', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('flaky.mjs'), args: ['crash'], retries: { max: 1, backoffMs: 10 } });
    expect((await task.result).data).toEqual({ attempt: 2 });
  });

  test('an error marked retryable: false is final', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('fatal-error.mjs'), retries: { max: 3, backoffMs: 10 } });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('error');
    expect(error.message).toContain('invalid API key');
    expect(error.payload?.status).toBe('error');
    expect(error.payload?.retryable).toBe(false);
    expect(task.snapshot().attempt).toBe(1);
  });

  test('retries stop at max and report the last failure', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('exit-silently.mjs'), retries: { max: 2, backoffMs: 10 } });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('crashed');
    expect(task.snapshot().attempt).toBe(3);
  });

  test('the wait between attempts is on the broker’s clock: backoff × factor^(n−1), no attempt before it', async () => {
    const clock = new FakeClock();
    const { broker } = makeBroker({ clock });
    const task = broker.submit({ command: fixture('exit-silently.mjs'), retries: { max: 2, backoffMs: 60_000, factor: 3 } });
    const started: number[] = [];
    task.on('update', (u) => u.kind === 'started' && started.push(u.attempt));
    for (const [attempt, waitMs] of [
      [1, 60_000],
      [2, 180_000],
    ] as const) {
      await waitFor(() => task.snapshot().state === 'retrying' && clock.pending === 1, `the wait after attempt ${attempt}`);
      clock.advance(waitMs - 1);
      // The next attempt starts only from the wait's timer, which has not run.
      expect({ started, pending: clock.pending }).toEqual({ started: [...Array(attempt).keys()].map((i) => i + 1), pending: 1 });
      clock.advance(1);
      await waitFor(() => started.length === attempt + 1, `attempt ${attempt + 1} to start`);
    }
    expect(((await settle(task.result)) as { error: TaskError }).error.reason).toBe('crashed');
    expect(clock.pending).toBe(0);
  });
});
