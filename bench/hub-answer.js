/**
 * The hub answering while it spawns (issue 36 item 2): how long the hub takes to answer a control
 * request — a page of tasks (`listTaskPage`, 50 a page) and `info` (what a client's hello asks) —
 * while it runs `count` SDK agents, 50 at a time, against the same requests to the same hub idle, in
 * the same run. The hub is `backchannel serve` in its own process; the requests come from a client
 * of their own (its own connection), one at a time, every 20 ms. What it measures: the hub's event
 * loop is held in spawn() (fork, then the wait for the child's exec; bench/many-tasks.js "held in
 * spawn()") and answers nothing meanwhile. Target: p99 under load ≤ 2× idle.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openClient } from '../dist/client/index.js';
import { agentPath, log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { hubEnvAllowing, startServe } from './lib/hub.js';
import { summarize } from './lib/stats.js';

const CONCURRENCY = 50;
const HISTORY_LIMIT = 100;
const AGENT = agentPath('sdk-return.mjs');
/** Between two requests of the probe: often enough to see each stall, rare enough not to load the hub. */
const PROBE_GAP_MS = 20;

main(async ({ quick }) => {
  const count = quick ? 200 : 1000;
  const idleSamples = quick ? 60 : 200;
  const dir = scratchDir();
  const env = { ...hubEnvAllowing(dir, AGENT), CURSOR_IPC_DIR: path.join(dir, 'ipc') };
  const hub = await startServe(path.join(dir, 'data'), env, [
    '--concurrency',
    String(CONCURRENCY),
    '--history-limit',
    String(HISTORY_LIMIT),
  ]);
  process.env.BACKCHANNEL_CONTROL = hub.control;
  const probe = await openClient({ withoutHub: 'refuse' });
  const load = await openClient({ withoutHub: 'refuse' });
  try {
    // A history to page through, and a warm hub.
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => (await load.run({ command: AGENT, origin: 'cli' })).result));
    log(`hub answer: ${idleSamples} requests to the idle hub, then requests during ${count} tasks @ ${CONCURRENCY}`);
    const idle = await sample(probe, () => false, idleSamples);
    let done = false;
    const during = sample(probe, () => done, Number.POSITIVE_INFINITY);
    let submitted = 0;
    let failures = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (submitted < count) {
          submitted += 1;
          const task = await load.run({ command: AGENT, origin: 'cli' });
          await task.result.catch(() => (failures += 1));
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    done = true;
    const busy = await during;
    const page = (samples) => summarize(samples.filter((s) => s.kind === 'page').map((s) => s.ms));
    const info = (samples) => summarize(samples.filter((s) => s.kind === 'info').map((s) => s.ms));
    const all = (samples) => summarize(samples.map((s) => s.ms));
    const [idleAll, busyAll] = [all(idle), all(busy)];
    const detail = (what, a, b) =>
      `${what}: p50 ${b.p50.toFixed(1)} vs ${a.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} vs ${a.p99.toFixed(1)} ms, max ${b.max.toFixed(0)} ms (${b.n} vs ${a.n} requests)`;
    const common = `${count} tasks @ ${CONCURRENCY} in ${seconds.toFixed(1)} s (${failures} failed); baseline column = the same requests to the same hub idle, same run; ${detail('tasks page', page(idle), page(busy))}; ${detail('info', info(idle), info(busy))}`;
    return {
      figure: 'hub-answer',
      count,
      idle: idleAll,
      busy: busyAll,
      rows: [
        row({
          fig: 'HA',
          name: `The hub's answer to a control request (tasks page, info) during ${count} tasks @ ${CONCURRENCY}, p50`,
          unit: 'ms',
          value: busyAll.p50,
          baseline: idleAll.p50,
          detail: common,
        }),
        row({
          fig: 'HA',
          name: `The hub's answer to a control request (tasks page, info) during ${count} tasks @ ${CONCURRENCY}, p99`,
          unit: 'ms',
          value: busyAll.p99,
          baseline: idleAll.p99,
          target: { op: '<=', ratio: 2 },
          detail: common,
        }),
      ],
    };
  } finally {
    await probe.close();
    await load.close();
    await hub.stop();
  }
});

/** Requests one at a time (a page of tasks, then info, alternately), PROBE_GAP_MS apart, until `stop()` or `n` of them. */
async function sample(client, stop, n) {
  const samples = [];
  for (let i = 0; i < n && !stop(); i++) {
    const kind = i % 2 === 0 ? 'page' : 'info';
    const t0 = performance.now();
    if (kind === 'page') await client.listTaskPage({ limit: 50 });
    else await client.info();
    samples.push({ kind, ms: performance.now() - t0 });
    await sleep(PROBE_GAP_MS);
  }
  return samples;
}
