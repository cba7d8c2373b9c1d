/**
 * Fault table, "load": many tasks at concurrency 50 with mixed outcomes (success, error, crash,
 * timeout). Every task ends exactly once, none is lost, the journal agrees with the API, nothing is
 * left running, and the broker's memory stays bounded. 100 tasks in `npm test` (two waves of 50, every
 * outcome 10 times), 300 in `npm run test:long` (BACKCHANNEL_LOAD_TASKS), 1,000 in `npm run soak`
 * (scripts/soak.js).
 */
import path from 'node:path';
import { expect, test } from 'vitest';
import { BrokerHost, type HostResult } from '../helpers/broker-host.js';
import { fixture, makeBroker, tempDir, waitFor } from '../helpers/core.js';
import { agentProcesses, expectNothingLeft } from '../helpers/reliability.js';

const TASKS = Number(process.env.BACKCHANNEL_LOAD_TASKS ?? 100);
const CONCURRENCY = 50;
const MODES = ['success', 'success', 'success', 'success', 'success', 'success', 'success', 'error', 'crash', 'hang'] as const;
const EXPECTED = {
  success: { state: 'succeeded' },
  error: { state: 'failed', reason: 'error' },
  crash: { state: 'failed', reason: 'crashed' },
  hang: { state: 'failed', reason: 'timeout' },
} as const;

test(
  `${TASKS} tasks at concurrency ${CONCURRENCY} with mixed outcomes: each ends once, none lost, journal = API, nothing left, RSS bounded`,
  { timeout: 300_000 },
  async () => {
    const root = tempDir();
    const ipcDir = path.join(root, 'ipc');
    const dataDir = path.join(root, 'data');
    const host = await BrokerHost.start({ ipcDir, dataDir, concurrency: CONCURRENCY });
    const startStats = await host.stats();
    const started = Date.now();
    const plan = Array.from({ length: TASKS }, (_, n) => ({ n, mode: MODES[n % MODES.length]! }));
    const ids = await host.submitMany(
      plan.map(({ n, mode }) => ({
        command: fixture('load-agent.mjs'),
        args: [mode],
        input: { n },
        ...(mode === 'hang' ? { timeoutMs: 1500 } : {}),
      })),
    );
    const submitted = plan.map((p, i) => ({ ...p, id: ids[i]! }));
    let maxRunning = 0;
    const sampler = setInterval(() => {
      maxRunning = Math.max(maxRunning, agentProcesses(ipcDir).length);
    }, 500);
    const results = await Promise.all(submitted.map(({ id }) => host.result(id)));
    clearInterval(sampler);
    await host.call('idle');
    const seconds = (Date.now() - started) / 1000;
    // The spawner thread (its own event loop: epoll, eventfd, message ports) lets go 2 s after its
    // last child; only what is open after that could be a leak.
    await waitFor(
      async () => (await host.stats()).fds <= startStats.fds + 2 || undefined,
      'the spawner thread to let go of its fds',
      15_000,
      100,
    ).catch(() => undefined);
    const stats = await host.stats();

    // Exactly one final state per task, the one its agent chose.
    expect(new Set(results.map((r) => r.id)).size).toBe(TASKS);
    for (const { id } of submitted) expect(stats.ended[id], `ended updates of ${id}`).toBe(1);
    const byId = new Map<string, HostResult>(results.map((r) => [r.id, r]));
    const api = await host.tasks();
    expect(api).toHaveLength(TASKS);
    const apiById = new Map(api.map((t) => [t.id, t]));
    for (const { id, mode, n } of submitted) {
      const snapshot = apiById.get(id);
      expect(snapshot, `task ${n} (${mode})`).toMatchObject(EXPECTED[mode]);
      expect(byId.get(id)!.ok).toBe(mode === 'success');
      if (mode === 'success') expect(snapshot!.result?.data).toEqual({ n });
    }
    expect(agentProcesses(ipcDir)).toEqual([]);
    await host.close();
    await expectNothingLeft(ipcDir);

    // The journal, read by a fresh broker, tells the same story as the API did.
    const { broker } = makeBroker({ dataDir });
    await broker.ready;
    const reloaded = broker.tasks();
    expect(reloaded).toHaveLength(TASKS);
    for (const snapshot of reloaded) {
      const live = apiById.get(snapshot.id)!;
      expect({ state: snapshot.state, reason: snapshot.reason, attempt: snapshot.attempt, data: snapshot.result?.data }).toEqual({
        state: live.state,
        reason: live.reason,
        attempt: live.attempt,
        data: live.result?.data,
      });
    }

    const MiB = 1024 * 1024;
    console.log(
      `load: ${TASKS} tasks at concurrency ${CONCURRENCY} in ${seconds.toFixed(1)} s (${(TASKS / seconds).toFixed(1)} tasks/s); ` +
        `broker RSS ${(startStats.rss / MiB).toFixed(0)} MiB at start, peak ${(stats.peakRss / MiB).toFixed(0)} MiB, heap ${(stats.heapUsed / MiB).toFixed(0)} MiB at end; ` +
        `fds ${startStats.fds} → ${stats.fds}; up to ${maxRunning} agent processes at once`,
    );
    expect(stats.peakRss).toBeLessThan(startStats.rss + 200 * MiB);
    expect(stats.fds).toBeLessThanOrEqual(startStats.fds + 2);
  },
);
