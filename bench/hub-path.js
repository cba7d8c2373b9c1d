/**
 * The hub path (issue 27 item 1), each beside its in-process baseline in the same run:
 *   (a) many tasks: `count` SDK agents that return at once, 50 at a time, submitted through the one
 *       task seam (dist/client/open.js) to a hub (`backchannel serve`, its own process) over its
 *       control endpoint — against the same client over a broker of its own (`openClient({ withoutHub: 'private', local: true })`),
 *       the same agent, concurrency and history limit. Tasks/s, and the hub's RSS after the run
 *       against after the warm-up (flat), its CPU per task;
 *   (b) MCP: `start_task` then `wait_for_task` on an open `backchannel mcp` session whose tasks run
 *       on that hub, against `backchannel run --json` of the same agent on the same hub (a whole CLI
 *       process, spawn → exit), interleaved.
 */
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { openClient } from '../dist/client/index.js';
import { agentPath, log, rssMb, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { CLI, hubEnvAllowing, runCli, startServe } from './lib/hub.js';
import { cpuMicros, interleave, summarize } from './lib/stats.js';
import { describeWarmUp, warmUntilSteady } from './lib/warm-up.js';

const CONCURRENCY = 50;
const HISTORY_LIMIT = 100;
const AGENT = agentPath('sdk-return.mjs');

main(async ({ quick }) => {
  const count = quick ? 200 : 1000;
  const mcpRuns = quick ? 6 : 20;
  const dir = scratchDir();
  // The run policy lets MCP run this one agent (docs/run-policy.md); the seam's tasks say they are `run`'s.
  const env = hubEnvAllowing(dir, AGENT);

  // (a) in process first: the same seam over a broker of this process.
  log(`hub path: ${count} tasks @ ${CONCURRENCY} in process, then through the hub`);
  const local = await openClient({
    withoutHub: 'private',
    local: true,
    broker: {
      concurrency: CONCURRENCY,
      historyLimit: HISTORY_LIMIT,
      dataDir: path.join(dir, 'local-data'),
      ipcDir: path.join(dir, 'ipc-local'),
    },
  });
  let inProcess;
  try {
    inProcess = await measurePool(
      local,
      count,
      () => rssMb(),
      () => cpuMicros() / 1000,
    );
  } finally {
    await local.close();
  }

  const hub = await startServe(path.join(dir, 'data'), { ...env, CURSOR_IPC_DIR: path.join(dir, 'ipc-hub') }, [
    '--concurrency',
    String(CONCURRENCY),
    '--history-limit',
    String(HISTORY_LIMIT),
  ]);
  let viaHub;
  let mcp;
  try {
    process.env.BACKCHANNEL_CONTROL = hub.control;
    const remote = await openClient({ withoutHub: 'refuse' });
    try {
      viaHub = await measurePool(
        remote,
        count,
        () => hub.rssMb(),
        () => hub.cpuMs(),
      );
    } finally {
      await remote.close();
    }
    mcp = await measureMcp(env, hub.control, mcpRuns);
  } finally {
    await hub.stop();
  }

  // The limit of the RSS row (issue 27 item 4): the same pool through a hub whose V8 young generation is
  // capped at 1 MB. The heap after GC stays flat; what grows is the new space V8 sizes up under a busy
  // broker's allocation rate (up to 2 × 16 MB semi-spaces by default) — reserved for speed, not kept objects.
  const capped = await startServe(
    path.join(dir, 'data-capped'),
    { ...env, CURSOR_IPC_DIR: path.join(dir, 'ipc-capped') },
    ['--concurrency', String(CONCURRENCY), '--history-limit', String(HISTORY_LIMIT)],
    [SEMI_SPACE_CAP],
  );
  let viaCapped;
  try {
    process.env.BACKCHANNEL_CONTROL = capped.control;
    const remote = await openClient({ withoutHub: 'refuse' });
    try {
      viaCapped = await measurePool(
        remote,
        count,
        () => capped.rssMb(),
        () => capped.cpuMs(),
      );
    } finally {
      await remote.close();
    }
  } finally {
    await capped.stop();
  }

  const same =
    'baseline column = the same seam (dist/client/open.js) over a broker in this process, same agent, concurrency and history limit, same run';
  return {
    figure: 'hub-path',
    count,
    inProcess,
    viaHub,
    mcp,
    rows: [
      row({
        fig: 'HP',
        name: `Through the hub: ${count} tasks @ ${CONCURRENCY}, tasks/s`,
        unit: 'tasks/s',
        value: viaHub.rate,
        baseline: inProcess.rate,
        target: { op: '>=', ratio: 0.85 },
        detail: `start → result p50 ${viaHub.latency.p50.toFixed(0)} vs ${inProcess.latency.p50.toFixed(0)} ms, p99 ${viaHub.latency.p99.toFixed(0)} vs ${inProcess.latency.p99.toFixed(0)} ms; ${viaHub.failures + inProcess.failures} failed; ${same}`,
      }),
      row({
        fig: 'HP',
        name: "Through the hub: the hub's RSS after the run vs after warm-up",
        unit: 'MB',
        value: viaHub.rssEnd,
        baseline: viaHub.rssAfterWarmup,
        target: { op: '<=', ratio: 1.1 },
        detail: `hub RSS at start ${viaHub.rssStart.toFixed(0)} MB; ${describeWarmUp(viaHub.warmUp, 'RSS', 'MB')} (the first within 2% of the last ends it); in process (this process, for comparison): ${inProcess.rssAfterWarmup.toFixed(0)} → ${inProcess.rssEnd.toFixed(0)} MB; target: flat (within 10%)`,
      }),
      row({
        fig: 'HP',
        name: `(limit) Through a hub with ${SEMI_SPACE_CAP}: its RSS after the run vs after warm-up`,
        unit: 'MB',
        value: viaCapped.rssEnd,
        baseline: viaCapped.rssAfterWarmup,
        detail: `${describeWarmUp(viaCapped.warmUp, 'RSS', 'MB')}; the same pool through a second hub whose V8 young generation is capped: what the RSS row's growth is (new space sized up for speed, not kept objects); its tasks/s ${viaCapped.rate.toFixed(1)} vs ${viaHub.rate.toFixed(1)} (${(viaCapped.rate / viaHub.rate).toFixed(2)}×) and CPU per task ${viaCapped.cpuMsPerTask.toFixed(1)} vs ${viaHub.cpuMsPerTask.toFixed(1)} ms on the default hub`,
      }),
      row({
        fig: 'HP',
        name: 'Through the hub: CPU per task of the broker process',
        unit: 'ms',
        value: viaHub.cpuMsPerTask,
        baseline: inProcess.cpuMsPerTask,
        detail: `the hub's process (broker, control endpoint, follow streams) vs this process running the broker and the seam, over the timed batch; ${same}`,
      }),
      row({
        fig: 'HP',
        name: 'MCP start_task → wait_for_task result vs `run --json`, on the hub, p50',
        unit: 'ms',
        value: mcp.mcp.p50,
        baseline: mcp.run.p50,
        target: { op: '<=', ratio: 1.2 },
        detail: `${mcp.mcp.n} of each, interleaved; p90 ${mcp.mcp.p90.toFixed(0)} vs ${mcp.run.p90.toFixed(0)} ms; MCP: two tool calls on an open \`backchannel mcp\` session; baseline column = \`run --json\` (a whole CLI process, spawn → exit) of the same agent on the same hub`,
      }),
    ],
  };
});

const SEMI_SPACE_CAP = '--max-semi-space-size=1';

/** Warm-up batches of a fifth until the RSS settles (bench/lib/warm-up.js), then `count` tasks, `CONCURRENCY` at a time. */
async function measurePool(tasks, count, rss, cpuMs) {
  let failures = 0;
  const batch = async (size) => {
    const latencies = [];
    let submitted = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (submitted < size) {
          submitted += 1;
          const s0 = performance.now();
          const task = await tasks.run({ command: AGENT, origin: 'cli' });
          try {
            await task.result;
            latencies.push(performance.now() - s0);
          } catch {
            failures += 1;
          }
        }
      }),
    );
    return { seconds: (performance.now() - t0) / 1000, latencies };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 500));
  await (
    await tasks.submit({ command: AGENT, origin: 'cli' })
  ).result;
  await settle();
  const rssStart = rss();
  const warmUp = await warmUntilSteady(
    () => batch(count / 5),
    async () => {
      await settle();
      return rss();
    },
  );
  const rssAfterWarmup = rss();
  const cpu0 = cpuMs();
  const run = await batch(count);
  const cpuMsPerTask = (cpuMs() - cpu0) / count;
  await settle();
  return {
    rate: count / run.seconds,
    latency: summarize(run.latencies),
    cpuMsPerTask,
    rssStart,
    rssAfterWarmup,
    rssEnd: rss(),
    warmUp,
    failures,
  };
}

async function measureMcp(env, control, runs) {
  const client = new Client({ name: 'backchannel-bench', version: '1.0.0' });
  const childEnv = Object.fromEntries(Object.entries({ ...env, BACKCHANNEL_CONTROL: control }).filter(([, v]) => typeof v === 'string'));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv, stderr: 'ignore' }));
  try {
    const viaMcp = async () => {
      const t0 = performance.now();
      const started = await client.callTool({ name: 'start_task', arguments: { command: process.execPath, args: [AGENT] } });
      if (started.isError) throw new Error(`start_task: ${JSON.stringify(started.content).slice(0, 300)}`);
      const { task_id } = started.structuredContent;
      const done = await client.callTool({ name: 'wait_for_task', arguments: { task_id } });
      if (done.isError || done.structuredContent?.state !== 'succeeded')
        throw new Error(`wait_for_task: ${JSON.stringify(done.structuredContent ?? done.content).slice(0, 300)}`);
      return performance.now() - t0;
    };
    const viaRun = async () =>
      (await runCli(['run', '--json', '--', process.execPath, AGENT], { ...env, BACKCHANNEL_CONTROL: control })).ms;
    await viaMcp();
    await viaRun();
    const samples = await interleave(runs, { mcp: viaMcp, run: viaRun });
    return { mcp: summarize(samples.mcp), run: summarize(samples.run) };
  } finally {
    await client.close();
  }
}
