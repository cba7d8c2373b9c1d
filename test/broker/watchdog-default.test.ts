import { afterEach, describe, expect, test, vi } from 'vitest';
import type { TaskError } from '../../src/broker/index.js';
import { attemptSettings, DEFAULTS, resolveOptions } from '../../src/broker/settings.js';
import { Task } from '../../src/broker/task/task.js';
import { AttemptTimers, type WatchdogFire } from '../../src/broker/guards/watchdog.js';
import type { TaskSpec } from '../../src/model/task.js';
import { parseDuration } from '../../src/model/duration.js';
import { ownerTaskGuards } from '../../src/hub/task-guards.js';
import { fixture, makeBroker, settle } from '../helpers/core.js';

/** The attempt settings a spec gets from a broker with `options`. */
function settingsOf(spec: Partial<TaskSpec>, options = {}) {
  const task = new Task({ id: 't', spec: { command: 'x', ...spec }, label: 'x', cwd: '/', maxAttempts: 1 }, 10, () => {});
  return attemptSettings(task, 1, resolveOptions(options), { endpointDir: '/tmp', baseEnv: {} });
}

describe('the watchdog and the deadline by default', () => {
  test('a task that sets neither gets the default deadline and the default watchdog, armed by its first heartbeat', () => {
    const s = settingsOf({});
    expect(s.timeoutMs).toBe(DEFAULTS.timeoutMs);
    expect(s.heartbeatTimeoutMs).toBe(DEFAULTS.heartbeatTimeoutMs);
    expect(s.watchdogFromFirstHeartbeat).toBe(true);
  });

  test('0 turns each off; a value given arms the watchdog from the start; a broker default applies', () => {
    expect(settingsOf({ timeoutMs: 0, heartbeatTimeoutMs: 0 })).toMatchObject({ timeoutMs: 0, heartbeatTimeoutMs: 0 });
    const given = settingsOf({ heartbeatTimeoutMs: 5000 });
    expect(given.heartbeatTimeoutMs).toBe(5000);
    expect(given.watchdogFromFirstHeartbeat).toBeUndefined();
    expect(settingsOf({}, { defaults: { timeoutMs: 60_000 }, watchdogMs: 0 })).toMatchObject({ timeoutMs: 60_000, heartbeatTimeoutMs: 0 });
  });

  test('an agent that heartbeats and then hangs is failed as stalled by the default watchdog', async () => {
    const { broker } = makeBroker({ watchdogMs: 1500 });
    const task = broker.submit({ command: fixture('heartbeats-then-hangs.mjs') });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('stalled');
    expect(error.message).toContain('no message for 1500 ms');
    await task.finished;
  });

  test('an agent that never heartbeats is not stalled by the default watchdog, however quiet', async () => {
    const { broker } = makeBroker({ watchdogMs: 300 });
    const task = broker.submit({ command: fixture('silent-then-done.mjs'), args: ['1500'] });
    expect((await task.result).data).toEqual({ quiet: true });
    await task.finished;
  });

  test('heartbeatTimeoutMs: 0 turns the default watchdog off for a task', () => {
    // The settings carry the 0 (above); the timers it arms never stall, however long it is quiet.
    expect(settingsOf({ heartbeatTimeoutMs: 0 }, { watchdogMs: 300 }).heartbeatTimeoutMs).toBe(0);
    const { fired, timers } = fakeTimers(0, 0);
    timers.heartbeat();
    vi.advanceTimersByTime(3_600_000);
    vi.useRealTimers();
    expect(fired).toEqual([]);
    timers.stop();
  });
});

describe('the attempt timers, on a fake clock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test('armed by the first heartbeat: silent before it, stalled a watchdog period after the last message', () => {
    const { fired, timers } = fakeTimers(0, 300, true);
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual([]);
    timers.heartbeat();
    vi.advanceTimersByTime(200);
    timers.alive();
    vi.advanceTimersByTime(299);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1 + DECIDES);
    expect(fired).toEqual(['stalled']);
    timers.stop();
  });

  test('armed from the start when asked; the deadline fires however chatty the agent', () => {
    const { fired, timers } = fakeTimers(1000, 300);
    vi.advanceTimersByTime(299);
    timers.alive();
    for (let ms = 0; ms < 700; ms += 100) {
      vi.advanceTimersByTime(100);
      timers.alive();
    }
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1 + DECIDES);
    expect(fired).toEqual(['timeout']);
    timers.stop();
  });

  test('a message read in the turn the watchdog comes due keeps it quiet; nothing fires after stop', () => {
    const { fired, timers } = fakeTimers(0, 300);
    // The timer comes due, and the line waiting to be read is read before it decides (setImmediate).
    vi.advanceTimersByTime(300);
    timers.alive();
    vi.advanceTimersByTime(299);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1 + DECIDES);
    expect(fired).toEqual(['stalled']);
    fired.length = 0;
    timers.alive();
    vi.advanceTimersByTime(300);
    timers.stop();
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual([]);
  });
});

/** A timer that comes due decides one turn later (setImmediate): 1 ms on the fake clock. */
const DECIDES = 1;

/** AttemptTimers on vitest's fake timers (setTimeout and refresh, setImmediate, queueMicrotask). */
function fakeTimers(timeoutMs: number, heartbeatTimeoutMs: number, fromFirstHeartbeat = false) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'queueMicrotask', 'Date'] });
  const fired: WatchdogFire[] = [];
  const timers = new AttemptTimers(timeoutMs, heartbeatTimeoutMs, (kind) => fired.push(kind), fromFirstHeartbeat);
  return { fired, timers };
}

describe('the hub’s defaults from the config file', () => {
  test('serve.timeout and serve.heartbeat_timeout set the default deadline and watchdog, as durations', () => {
    const config = { path: '/c.yaml', exists: true, sections: { serve: { timeout: '90m', heartbeat_timeout: 0 } } };
    expect(ownerTaskGuards(config)).toEqual({ defaults: { timeoutMs: 5_400_000 }, watchdogMs: 0 });
    expect(() => ownerTaskGuards({ ...config, sections: { serve: { timeout: 'soon' } } })).toThrow(
      '/c.yaml: serve.timeout must be a duration such as 90s, 10m, 2h (or milliseconds), got "soon"',
    );
  });
});

describe('durations as people write them', () => {
  test.each([
    ['90s', 90_000],
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5s', 1500],
    ['7d', 604_800_000],
    ['1500', 1500],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  test.each(['soon', '10 minutes', '-5s', '5x', ''])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
