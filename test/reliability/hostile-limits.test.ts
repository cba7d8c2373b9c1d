/**
 * Fault table, "limits": over-long and never-ending lines, slowloris connections, a partial flood
 * and a connection flood. Each ends with a clear reason, the broker unharmed, a neighbour task
 * unaffected, and no file, process or fd left behind.
 */
import { describe, expect, test } from 'vitest';
import type { TaskError } from '../../src/broker/index.js';
import { BrokerHost, type HostStats } from '../helpers/broker-host.js';
import { fixture, makeBroker, settle, tempDir, waitFor } from '../helpers/core.js';
import { expectNothingLeft, hostile, openFds } from '../helpers/reliability.js';
import path from 'node:path';

const MiB = 1024 * 1024;

describe('over-long lines', () => {
  test('a first line over the pre-authentication limit (1 MiB) is refused; the agent then reports normally', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('huge-line.mjs'), args: ['pre-auth', String(2 * MiB)] });
    const result = await task.result;
    expect((result.data as { reply: string }).reply).toMatch(/"type":"reject".*exceeds the 1048576-byte limit/);
    await task.finished;
    expect(task.snapshot().counters.rejected).toBe(1);
    expect(broker.logOf(task.id).map((l) => l.text)).toContainEqual(
      expect.stringMatching(/unauthenticated line of \d+\+ bytes exceeds the 1048576-byte limit/),
    );
    await expectNothingLeft(ipcDir);
  });

  test('a line over maxLineBytes on an authenticated connection fails the task with reason protocol, never retried', async () => {
    const { broker, ipcDir } = makeBroker({ limits: { maxLineBytes: 256 * 1024 } });
    const neighbour = broker.submit({ command: fixture('quick.mjs'), input: { n: 7 } });
    const task = broker.submit({ command: hostile('huge-line.mjs'), args: ['auth'], input: { bytes: MiB }, retries: 2 });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('protocol');
    expect(error.message).toMatch(/protocol error: line of \d+\+ bytes exceeds the 262144-byte limit/);
    await task.finished;
    expect(task.snapshot()).toMatchObject({ state: 'failed', reason: 'protocol', attempt: 1 });
    expect((await neighbour.result).data).toEqual({ n: 7 });
    await neighbour.finished;
    await expectNothingLeft(ipcDir);
  });

  test('a line that never ends is cut at the limit: protocol failure when authenticated, refusal before', async () => {
    const { broker, ipcDir } = makeBroker({ limits: { maxLineBytes: 512 * 1024 } });
    const authed = broker.submit({ command: hostile('endless-line.mjs'), args: ['auth'] });
    const unauthed = broker.submit({ command: hostile('endless-line.mjs'), args: ['pre-auth'] });
    const error = ((await settle(authed.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('protocol');
    expect(error.message).toMatch(/exceeds the 524288-byte limit/);
    const written = ((await unauthed.result).data as { written: number }).written;
    expect(written).toBeGreaterThan(MiB);
    await Promise.all([authed.finished, unauthed.finished]);
    expect(unauthed.snapshot().counters.rejected).toBe(1);
    await expectNothingLeft(ipcDir);
  });
});

describe('many unfinished lines', () => {
  test('unfinished lines on many authenticated connections are bounded together, not each: the task fails with reason protocol', async () => {
    const ipcDir = path.join(tempDir(), 'ipc');
    const host = await BrokerHost.start({ ipcDir, limits: { maxLineBytes: 8 * MiB } });
    const before = await host.stats();
    // 32 connections × 7 MiB: each line is under the 8 MiB limit, together 224 MiB.
    const id = await host.submit({ command: hostile('many-big-lines.mjs'), input: { connections: 32, bytes: 7 * MiB } });
    const outcome = await host.result(id);
    await host.call('idle');
    const after = await host.stats();
    console.log(`many unfinished lines: broker RSS ${(before.rss / MiB).toFixed(0)} → peak ${(after.peakRss / MiB).toFixed(0)} MiB`);
    expect(outcome).toMatchObject({ ok: false, reason: 'protocol' });
    expect(outcome.message).toMatch(/unfinished lines .* exceed the 8388608-byte limit/);
    expect((after.peakRss - before.rss) / MiB).toBeLessThan(64);
    await host.close();
    await expectNothingLeft(ipcDir);
  });
});

describe('slow and silent connections', () => {
  test('connections that send nothing, or trickle bytes without a newline, are closed after authTimeoutMs', async () => {
    const { broker, ipcDir } = makeBroker({ limits: { authTimeoutMs: 500 } });
    const task = broker.submit({ command: hostile('slowloris.mjs') });
    const { silentMs, tricklingMs } = (await task.result).data as { silentMs: number; tricklingMs: number };
    expect(silentMs).toBeGreaterThanOrEqual(450);
    expect(tricklingMs).toBeGreaterThanOrEqual(450);
    await task.finished;
    expect(task.snapshot().counters.rejected).toBe(2);
    expect(broker.logOf(task.id).filter((l) => l.text.includes('no authenticated message within 500 ms'))).toHaveLength(2);
    await expectNothingLeft(ipcDir);
  });
});

describe('floods', () => {
  test('a flood of partials: every one arrives, broker memory stays bounded, updates keep flowing and the panel feed coalesces', async () => {
    const dir = tempDir();
    const ipcDir = path.join(dir, 'ipc');
    const host = await BrokerHost.start({ ipcDir, bridge: true });
    const before = await host.stats();
    const floodMs = 4000;
    const started = Date.now();
    const flood = await host.submit({ command: hostile('flood.mjs'), input: { ms: floodMs } });
    const neighbour = await host.submit({ command: fixture('sdk-progress.mjs'), input: 'beside the flood' });
    const samples: HostStats[] = [];
    let settled: Awaited<ReturnType<typeof host.result>> | undefined;
    void host.result(flood).then((r) => (settled = r));
    // Sample the broker every 200 ms while the flood runs.
    const outcome = await waitFor(
      async () => {
        samples.push(await host.stats());
        return settled;
      },
      'the flood task to end',
      120_000,
      200,
    );
    const elapsed = Date.now() - started;
    const after = await host.stats();
    expect(outcome.ok).toBe(true);
    const sent = (outcome.payload!.data as { sent: number }).sent;
    // Backpressure, not loss: the agent is slowed down, and every partial it sent is applied.
    expect(after.partials - before.partials).toBeGreaterThanOrEqual(sent);
    expect(sent).toBeGreaterThan(1000);
    // Updates flow during the flood, not in one burst at the end.
    const counts = samples.map((s) => s.partials);
    const rising = counts.filter((n, i) => i > 0 && n > counts[i - 1]!).length;
    expect(rising).toBeGreaterThanOrEqual(2);
    const growthMiB = (after.peakRss - before.rss) / MiB;
    console.log(
      `flood: ${sent} partials in ${floodMs} ms (${Math.round(sent / (floodMs / 1000))}/s); broker RSS ${(before.rss / MiB).toFixed(0)} → peak ${(after.peakRss / MiB).toFixed(0)} MiB; ${after.bridgeEvents} panel events`,
    );
    expect(growthMiB).toBeLessThan(100);
    // The panel feed: at most one event per frame (16 ms) however fast partials come.
    expect(after.bridgeEvents).toBeLessThanOrEqual(Math.ceil(elapsed / 16) + 3);
    expect((await host.result(neighbour)).ok).toBe(true);
    await host.call('idle');
    await host.close();
    await expectNothingLeft(ipcDir);
  });

  test('a flood on the stdout fallback channel: every partial arrives and memory stays bounded', async () => {
    const ipcDir = path.join(tempDir(), 'ipc');
    const host = await BrokerHost.start({ ipcDir });
    const before = await host.stats();
    const id = await host.submit({ command: hostile('output-flood.mjs'), args: ['stdout', '3000'] });
    const outcome = await host.result(id);
    const after = await host.stats();
    expect(outcome).toMatchObject({ ok: true, payload: { meta: { channel: 'stdout' } } });
    const sent = (outcome.payload!.data as { sent: number }).sent;
    expect(after.partials - before.partials).toBe(sent);
    console.log(
      `stdout flood: ${sent} partials; broker RSS ${(before.rss / MiB).toFixed(0)} → peak ${(after.peakRss / MiB).toFixed(0)} MiB`,
    );
    expect((after.peakRss - before.rss) / MiB).toBeLessThan(100);
    await host.call('idle');
    await host.close();
    await expectNothingLeft(ipcDir);
  });

  test('a flood of log lines on stdout and stderr: the task log stays bounded (500 lines, 20 of stderr tail), memory too', async () => {
    const ipcDir = path.join(tempDir(), 'ipc');
    const host = await BrokerHost.start({ ipcDir });
    const before = await host.stats();
    const id = await host.submit({ command: hostile('output-flood.mjs'), args: ['log'], input: { ms: 3000 } });
    const outcome = await host.result(id);
    const after = await host.stats();
    expect(outcome.ok).toBe(true);
    const sent = (outcome.payload!.data as { sent: number }).sent;
    const snapshot = await host.get(id);
    expect(snapshot?.stderrTail?.split('\n').length).toBeLessThanOrEqual(20);
    console.log(
      `log flood: ${sent} lines of 1 KiB (${(sent / 1024).toFixed(0)} MiB); broker RSS ${(before.rss / MiB).toFixed(0)} → peak ${(after.peakRss / MiB).toFixed(0)} MiB`,
    );
    expect(sent).toBeGreaterThan(1000);
    expect((after.peakRss - before.rss) / MiB).toBeLessThan(100);
    await host.call('idle');
    await host.close();
    await expectNothingLeft(ipcDir);
  });

  test('1,000 connections to one endpoint: extras are closed at once, the task succeeds, no fd leaks', async () => {
    const { broker, ipcDir } = makeBroker();
    // Warm up (lazy libuv handles, module loads) before counting fds.
    await broker.submit({ command: fixture('quick.mjs') }).finished;
    const fdsBefore = openFds();
    const neighbour = broker.submit({ command: fixture('sdk-progress.mjs'), input: 'next door' });
    const task = broker.submit({ command: hostile('connection-flood.mjs'), input: { count: 1000 } });
    const stats = (await task.result).data as { connected: number; refused: number; failed: number; held: number };
    console.log(`connection flood: ${JSON.stringify(stats)}, fds before ${fdsBefore}`);
    expect(stats.connected + stats.failed).toBe(1000);
    // 64 per endpoint: the agent's own connection plus at most 63 unauthenticated ones are served.
    expect(stats.held).toBeLessThanOrEqual(63);
    expect(stats.refused).toBeGreaterThanOrEqual(stats.connected - 63);
    await task.finished;
    expect(task.snapshot().counters.rejected).toBeGreaterThanOrEqual(stats.refused);
    expect((await neighbour.result).data).toMatchObject({ echo: 'next door' });
    await broker.onIdle();
    await waitFor(() => openFds() <= fdsBefore, `open fds back to ${fdsBefore} (now ${openFds()})`, 5000).catch(() => {});
    expect(openFds()).toBeLessThanOrEqual(fdsBefore);
    // The broker is unharmed: a new task runs normally.
    expect((await broker.submit({ command: fixture('quick.mjs'), input: { n: 1 } }).result).data).toEqual({ n: 1 });
    await broker.onIdle();
    await expectNothingLeft(ipcDir);
  });
});
