/**
 * An attempt over an agent whose pid comes later, as it does through the spawner thread: nothing is
 * guarded or killed before the agent has started, a stop in between still kills it, and both kinds
 * of 'error' (it did not start; the spawner lost it) decide the attempt with their reason.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { AgentProcess } from '../../../src/broker/process/spawn-agent.js';
import { SpawnerStopped } from '../../../src/broker/process/spawner.js';
import { Attempt } from '../../../src/broker/task/attempt.js';
import { fakeWorld, settings } from '../in-memory.js';

/** A child that starts when the test says so. */
class StartingChild extends EventEmitter {
  pid: number | undefined;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  start(pid: number): void {
    this.pid = pid;
    this.emit('spawn');
  }
  exit(code: number | null, signal: NodeJS.Signals | null = null): void {
    this.stdout.end();
    this.stderr.end();
    this.emit('exit', code, signal);
  }
}

async function starting(overrides: Parameters<typeof settings>[0] = {}) {
  const world = fakeWorld();
  const child = new StartingChild();
  const spawned: number[] = [];
  world.io.spawn = () => child as unknown as AgentProcess;
  world.sink.spawned = (pid) => spawned.push(pid);
  const attempt = new Attempt(settings(overrides), world.sink, world.io);
  let decided = false;
  void attempt.outcome.then(() => (decided = true));
  await attempt.start();
  return { attempt, child, spawned, recorded: world.recorded, decided: () => decided };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('an attempt whose agent is still starting', () => {
  test('a stop before the agent has started kills it as soon as it has', async () => {
    const { attempt, child, spawned, recorded } = await starting();
    attempt.stop('cancelled', 'not needed');
    expect(await attempt.outcome).toMatchObject({ kind: 'failure', reason: 'cancelled', message: 'not needed' });
    expect(recorded.terminations).toEqual([]);
    child.start(77);
    expect(spawned).toEqual([77]);
    expect(recorded.terminations).toEqual([{ pid: 77, options: expect.objectContaining({ delayMs: 0 }) }]);
    child.exit(null, 'SIGTERM');
    await attempt.finished;
    expect(recorded.reaped).toEqual([77]);
  });

  test('its deadline runs from the start, not from the spawn request', async () => {
    vi.useFakeTimers();
    const { attempt, child, decided } = await starting({ timeoutMs: 1000 });
    await vi.advanceTimersByTimeAsync(5000);
    expect(decided()).toBe(false);
    child.start(78);
    // The deadline comes due at 1000 ms and decides a turn later (an immediate), once the messages
    // already waiting are read (src/broker/guards/watchdog.ts).
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(1);
    expect(await attempt.outcome).toMatchObject({ kind: 'failure', reason: 'timeout' });
    child.exit(null, 'SIGTERM');
    await vi.advanceTimersByTimeAsync(10_000);
    await attempt.finished;
  });

  test('an agent that did not start fails the attempt with the reason, and nothing is killed', async () => {
    const { attempt, child, spawned, recorded } = await starting({ command: 'missing-agent' });
    child.emit('error', Object.assign(new Error('spawn missing-agent ENOENT'), { code: 'ENOENT' }));
    expect(await attempt.outcome).toEqual({
      kind: 'failure',
      reason: 'crashed',
      message: 'command not found: missing-agent',
      retryable: false,
    });
    await attempt.finished;
    expect(spawned).toEqual([]);
    expect(recorded.terminations).toEqual([]);
    expect(recorded.reaped).toEqual([]);
  });

  test('an agent the spawner lost fails the attempt with the reason, and its exit ends it', async () => {
    const { attempt, child } = await starting();
    child.start(79);
    child.emit('error', new SpawnerStopped('the spawner thread stopped (exit code 1); the agent (pid 79) was killed'));
    expect(await attempt.outcome).toEqual({
      kind: 'failure',
      reason: 'crashed',
      message: 'the spawner thread stopped (exit code 1); the agent (pid 79) was killed',
      retryable: true,
    });
    child.exit(null, 'SIGKILL');
    await attempt.finished;
    expect(attempt.exitSignal).toBe('SIGKILL');
  });
});
