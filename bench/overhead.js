/**
 * Figure 1 — task overhead: submit() → resolved result for an agent that returns at once (SDK and
 * raw protocol), against a bare `node` that connects to a plain Unix-socket server, writes one
 * 2 KB line and exits (spawn → line parsed). Two limits beside them: the bare node after loading the
 * SDK's module, and a hand-written agent doing the protocol's steps with the module loaded. Runs are
 * interleaved so drift hits all five alike.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { TaskBroker } from '../dist/broker/index.js';
import { silentLogger } from '../dist/broker/index.js';
import { agentPath, log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { cpuMicros, interleave, summarize } from './lib/stats.js';

main(async ({ quick }) => {
  const runs = quick ? 8 : 30;
  const dir = scratchDir();
  const socketPath = path.join(dir, 'bare.sock');
  let onLine;
  const server = createServer((socket) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      text += chunk;
      const nl = text.indexOf('\n');
      if (nl !== -1) onLine(JSON.parse(text.slice(0, nl)));
    });
  });
  await new Promise((resolve) => server.listen(socketPath, resolve));
  const broker = new TaskBroker({ concurrency: 4, ipcDir: path.join(dir, 'ipc'), logger: silentLogger });
  await broker.ready;

  const bareAgent = (agent) => async () => {
    const c0 = cpuMicros();
    const t0 = performance.now();
    const got = new Promise((resolve) => (onLine = resolve));
    const child = spawn(process.execPath, [agentPath(agent)], {
      env: { ...process.env, BENCH_SOCKET: socketPath },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout.resume();
    child.stderr.resume();
    const line = await got;
    const ms = performance.now() - t0;
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    return { ms, childCpu: line.cpu, parentCpu: cpuMicros() - c0 };
  };
  const viaBroker = (agent) => async () => {
    const c0 = cpuMicros();
    const t0 = performance.now();
    const task = broker.submit({ command: agentPath(agent) });
    const result = await task.result;
    const ms = performance.now() - t0;
    await task.finished;
    return { ms, childCpu: result.data.cpu, parentCpu: cpuMicros() - c0 };
  };
  const bare = bareAgent('bare-connect.mjs');
  const bareImport = bareAgent('bare-import.mjs');
  // Warm-up: first spawns pay for cold page cache.
  await bare();
  await bareImport();
  await viaBroker('sdk-return.mjs')();
  await viaBroker('raw-return.mjs')();
  await viaBroker('raw-hello-import.mjs')();
  log(`overhead: ${runs} runs × 5 variants`);
  const samples = await interleave(runs, {
    bare,
    bareImport,
    sdk: viaBroker('sdk-return.mjs'),
    raw: viaBroker('raw-return.mjs'),
    rawHello: viaBroker('raw-hello-import.mjs'),
  });
  await broker.close();
  server.close();

  const stat = (name) => {
    const s = samples[name];
    return {
      wall: summarize(s.map((x) => x.ms)),
      childCpuMs: summarize(s.map((x) => x.childCpu / 1000)).p50,
      parentCpuMs: summarize(s.map((x) => x.parentCpu / 1000)).p50,
    };
  };
  const base = stat('bare');
  const rows = [];
  // Issue 13 sets ≤ 1.1× for the SDK agent; the raw-protocol agent keeps round 1's ≤ 1.2×.
  for (const [name, label, target] of [
    ['sdk', 'SDK agent (runAgent)', 1.1],
    ['raw', 'raw-protocol agent', 1.2],
  ]) {
    const s = stat(name);
    rows.push(
      row({
        fig: '1',
        name: `Task overhead, ${label}: spawn → result p50`,
        unit: 'ms',
        value: s.wall.p50,
        baseline: base.wall.p50,
        target: { op: '<=', ratio: target },
        detail: `p90 ${s.wall.p90.toFixed(1)} vs ${base.wall.p90.toFixed(1)} ms; agent CPU at send ${s.childCpuMs.toFixed(1)} vs ${base.childCpuMs.toFixed(1)} ms; broker-process CPU/task ${s.parentCpuMs.toFixed(1)} vs ${base.parentCpuMs.toFixed(1)} ms`,
      }),
    );
  }
  // What bounds the SDK row (issue 27 item 4): loading the SDK's module is most of it. Measured here, the
  // same way as the bare baseline, so the SDK's own protocol cost can be judged against that limit.
  const sdk = stat('sdk');
  const limit = stat('bareImport');
  rows.push(
    row({
      fig: '1',
      name: '(limit) bare node that only loads the SDK module: spawn → line p50',
      unit: 'ms',
      value: limit.wall.p50,
      baseline: base.wall.p50,
      detail: `module loading alone: ${(limit.wall.p50 - base.wall.p50).toFixed(1)} ms of wall time, agent CPU at send ${limit.childCpuMs.toFixed(1)} vs ${base.childCpuMs.toFixed(1)} ms`,
    }),
    row({
      fig: '1',
      name: 'Task overhead, SDK agent vs that limit (bare node + the SDK module loaded)',
      unit: 'ms',
      value: sdk.wall.p50,
      baseline: limit.wall.p50,
      target: { op: '<=', ratio: 1.1 },
      detail: `what the SDK and the broker add beyond loading the module: hello → input, the result and its ack, the broker's spawn and socket; ${(sdk.wall.p50 - limit.wall.p50).toFixed(1)} ms`,
    }),
  );
  // The protocol's own limit: an agent that needs its input waits for hello → welcome + input before it
  // can answer. A hand-written agent doing only that (with the module loaded) measures the broker and
  // the round trip; the SDK agent against it is the SDK's own code.
  const protocol = stat('rawHello');
  rows.push(
    row({
      fig: '1',
      name: '(limit) hand-written agent, SDK module loaded: hello → input → result through the broker p50',
      unit: 'ms',
      value: protocol.wall.p50,
      baseline: base.wall.p50,
      detail: `the module, the broker and the hello round trip: ${(protocol.wall.p50 - base.wall.p50).toFixed(1)} ms over bare, ${(protocol.wall.p50 - limit.wall.p50).toFixed(1)} ms over the module alone; agent CPU at send ${protocol.childCpuMs.toFixed(1)} vs ${base.childCpuMs.toFixed(1)} ms`,
    }),
    row({
      fig: '1',
      name: "Task overhead, SDK agent vs that limit (the protocol's minimum, by hand)",
      unit: 'ms',
      value: sdk.wall.p50,
      baseline: protocol.wall.p50,
      target: { op: '<=', ratio: 1.1 },
      detail: `the SDK's own code (its connection, the task object, the final payload's meta and ack wait): ${(sdk.wall.p50 - protocol.wall.p50).toFixed(1)} ms; agent CPU at send ${sdk.childCpuMs.toFixed(1)} vs ${protocol.childCpuMs.toFixed(1)} ms`,
    }),
  );
  return {
    figure: 1,
    runs,
    baseline: 'bare node: spawn → connect → one 2 KB line → plain server parses it',
    samples: { bare: base, bareImport: limit, sdk, raw: stat('raw'), rawHello: protocol },
    rows,
  };
});
