/** Attempt decisions over an in-memory endpoint and a fake child: no sockets, no processes. */
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { Attempt } from '../../src/broker/task/attempt.js';
import { spoolPath } from '../../src/protocol/spool.js';
import { PROTOCOL_VERSION, STDOUT_PREFIX } from '../../src/protocol/index.js';
import { fakeWorld, final, settings, TASK_ID } from './in-memory.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function started(overrides: Parameters<typeof settings>[0] = {}) {
  const world = fakeWorld();
  const attempt = new Attempt(settings(overrides), world.sink, world.io);
  await attempt.start();
  return { attempt, ...world, endpoint: world.recorded.endpoint!, child: world.recorded.child! };
}

describe('Attempt decisions (in memory)', () => {
  test('the greeting carries the protocol version and the input', async () => {
    const { endpoint } = await started({ input: { q: 1 }, heartbeatTimeoutMs: 0 });
    expect(endpoint.handlers.greeting()).toEqual([
      { type: 'welcome', task_id: TASK_ID, attempt: 1, protocol: PROTOCOL_VERSION, heartbeat_timeout_ms: 0 },
      { type: 'input', task_id: TASK_ID, data: { q: 1 } },
    ]);
  });

  test('the first final wins: it is acked once acknowledged (durable) and decides; a later one is acked but ignored', async () => {
    const { attempt, endpoint, child, recorded } = await started();
    endpoint.agentSends({ task_id: TASK_ID, status: 'partial', data: { progress: 10 } });
    endpoint.agentSends(final('success', 'first'));
    endpoint.agentSends(final('error', 'second'));
    expect(await attempt.outcome).toMatchObject({ kind: 'final', channel: 'socket', payload: { data: 'first' } });
    expect(recorded.partials).toHaveLength(1);
    // Both acks wait for the caller's word that the ending is on disk (an acked agent does not spool).
    expect(endpoint.sent.filter((m) => m.type === 'ack')).toHaveLength(0);
    attempt.acknowledge();
    expect(endpoint.sent.filter((m) => m.type === 'ack')).toHaveLength(2);
    expect(recorded.problems).toEqual([
      { kind: 'ignored', detail: 'error payload via socket after the task was decided', status: 'error' },
    ]);
    // An agent that lingers after its final payload is stopped after the cancel grace.
    expect(recorded.terminations).toEqual([{ pid: 4242, options: expect.objectContaining({ delayMs: 3000, graceMs: 1000 }) }]);
    child.exit(0);
    await attempt.finished;
    expect(attempt.exitCode).toBe(0);
    expect(recorded.reaped).toEqual([4242]);
    expect(endpoint.closed).toBe(true);
  });

  test('a final payload on the stdout fallback decides with channel stdout', async () => {
    const { attempt, child } = await started();
    child.stdout.write(`${STDOUT_PREFIX}${JSON.stringify(final('success', 'via stdout'))}\n`);
    expect(await attempt.outcome).toMatchObject({ kind: 'final', channel: 'stdout', payload: { data: 'via stdout' } });
    child.exit(0);
    await attempt.finished;
  });

  test('a stdout payload for another task is rejected, not delivered', async () => {
    const { attempt, child, recorded } = await started();
    child.stdout.write(`data: ${JSON.stringify({ ...final('success'), task_id: 'someone-else' })}\n`);
    child.exit(0);
    expect(await attempt.outcome).toMatchObject({ kind: 'failure', reason: 'crashed', retryable: true });
    expect(recorded.problems.map((p) => [p.kind, p.cause])).toEqual([['rejected', 'task-id']]);
    await attempt.finished;
  });

  test('the deadline stops the attempt: retryable timeout, cancel sent, SIGTERM after the cancel grace', async () => {
    const { attempt, endpoint, child, recorded } = await started({ timeoutMs: 20 });
    expect(await attempt.outcome).toEqual({ kind: 'failure', reason: 'timeout', message: 'timed out after 20 ms', retryable: true });
    expect(endpoint.sent).toContainEqual({ type: 'cancel', task_id: TASK_ID, reason: 'timeout' });
    expect(recorded.terminations[0]?.options.delayMs).toBe(3000);
    child.exit(null, 'SIGTERM');
    await attempt.finished;
  });

  test('the stall watchdog is reset by activity and fires on silence', async () => {
    vi.useFakeTimers();
    try {
      const { attempt, endpoint, child } = await started({ heartbeatTimeoutMs: 40 });
      let decided = false;
      void attempt.outcome.then(() => (decided = true));
      for (let beat = 0; beat < 3; beat++) {
        await vi.advanceTimersByTimeAsync(30);
        endpoint.agentSends({ task_id: TASK_ID, status: 'heartbeat' });
      }
      // 90 ms have passed, never 40 without a message: alive.
      expect(decided).toBe(false);
      await vi.advanceTimersByTimeAsync(41);
      expect(decided).toBe(true);
      expect(await attempt.outcome).toEqual({
        kind: 'failure',
        reason: 'stalled',
        message: 'stalled: no message for 40 ms',
        retryable: true,
      });
      child.exit(null, 'SIGTERM');
      await vi.advanceTimersByTimeAsync(100);
      await attempt.finished;
    } finally {
      vi.useRealTimers();
    }
  });

  test('a cancel with no connection open goes straight to SIGTERM; it is final (not retryable)', async () => {
    const { attempt, endpoint, child, recorded } = await started();
    endpoint.connections = 0;
    attempt.stop('cancelled', 'by the user');
    expect(await attempt.outcome).toEqual({ kind: 'failure', reason: 'cancelled', message: 'by the user', retryable: false });
    expect(recorded.terminations[0]?.options.delayMs).toBe(0);
    // The agent's own `cancelled` after the decision is a confirmation, not a problem.
    endpoint.agentSends(final('cancelled'));
    expect(recorded.logs).toContain('broker: the agent confirmed the cancel');
    expect(recorded.events).toEqual([{ kind: 'stopping', reason: 'cancelled' }, { kind: 'cancel-confirmed' }]);
    expect(recorded.problems).toEqual([]);
    child.exit(null, 'SIGTERM');
    await attempt.finished;
  });

  test('a question that arrives after the cancel is refused at once, not passed on (its timer would outlive the task)', async () => {
    const { attempt, endpoint, child, recorded } = await started();
    const ask = { type: 'ask', task_id: TASK_ID, ask_id: 'q1', question: 'Which branch?' } as const;
    endpoint.agentAsks(ask);
    expect(recorded.asks).toEqual([ask]);
    attempt.stop('cancelled', 'the broker is shutting down');
    // The agent had sent its next question before the cancel reached it.
    endpoint.agentAsks({ ...ask, ask_id: 'q2' });
    expect(recorded.asks).toEqual([ask]);
    expect(endpoint.sent).toContainEqual({ type: 'answer', task_id: TASK_ID, ask_id: 'q2', error: 'the task has ended' });
    child.exit(0);
    await attempt.finished;
  });

  test('a cancel with the agent connected gives it the cancel grace first', async () => {
    const { attempt, child, recorded } = await started({ cancelGraceMs: 500 });
    attempt.stop('cancelled', 'by the user');
    expect(recorded.terminations[0]?.options).toMatchObject({ delayMs: 500, graceMs: 1000 });
    child.exit(0);
    await attempt.finished;
  });

  test('an exit without a final payload is a retryable crash; a spooled result is adopted instead', async () => {
    const crashed = await started();
    crashed.child.exit(3);
    expect(await crashed.attempt.outcome).toEqual({
      kind: 'failure',
      reason: 'crashed',
      message: 'the agent exited with code 3 without sending a final payload',
      retryable: true,
    });
    await crashed.attempt.finished;

    const spoolDir = mkdtempSync(path.join(os.tmpdir(), 'bc-spool-'));
    dirs.push(spoolDir);
    const spooled = await started({ spoolDir });
    writeFileSync(spoolPath(spoolDir, TASK_ID), JSON.stringify(final('success', 'from the spool')));
    spooled.child.exit(0);
    expect(await spooled.attempt.outcome).toMatchObject({ kind: 'final', channel: 'spool', payload: { data: 'from the spool' } });
    await spooled.attempt.finished;
    // Kept until the caller says the result taken from it is durable, then removed.
    expect(existsSync(spoolPath(spoolDir, TASK_ID))).toBe(true);
    spooled.attempt.acknowledge();
    expect(existsSync(spoolPath(spoolDir, TASK_ID))).toBe(false);
  });

  test('a line over the limit on the socket is a protocol failure (never retried)', async () => {
    const { attempt, endpoint, child, recorded } = await started();
    endpoint.handlers.overflow('line of 99+ bytes exceeds the 10-byte limit');
    expect(await attempt.outcome).toMatchObject({
      kind: 'failure',
      reason: 'protocol',
      message: 'protocol error: line of 99+ bytes exceeds the 10-byte limit',
      detail: 'line of 99+ bytes exceeds the 10-byte limit',
      retryable: false,
    });
    expect(recorded.events).toEqual([{ kind: 'protocol-error', detail: 'line of 99+ bytes exceeds the 10-byte limit' }]);
    expect(endpoint.sent).toContainEqual({ type: 'cancel', task_id: TASK_ID, reason: 'protocol' });
    child.exit(0);
    await attempt.finished;
  });

  test('stopped while the endpoint opens: the process is never spawned', async () => {
    const world = fakeWorld();
    const attempt = new Attempt(settings(), world.sink, world.io);
    const starting = attempt.start();
    attempt.stop('cancelled', 'early');
    await starting;
    await attempt.finished;
    expect(world.recorded.child).toBeUndefined();
    expect(await attempt.outcome).toMatchObject({ reason: 'cancelled' });
  });
});
