/**
 * Figure 5 — many tasks: `count` SDK agents that return at once, `concurrency` at a time, through
 * one broker with a journal. Reports tasks/s, start → result latency, the broker process's RSS
 * (start, peak, end) and heap after GC, and open file descriptors before and after. Baseline: the
 * same number of bare `node` connect-write-exit processes at the same concurrency, no broker.
 * A warm-up batch (a fifth of the size) runs first; memory is compared at the end of each batch,
 * so retained history (bounded by historyLimit) is not mistaken for a leak. The baseline runs a
 * quarter as many processes: its rate needs no more, and spawning is most of the suite's time.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { TaskBroker, silentLogger } from '../dist/broker/index.js';
import { agentPath, log, openFds, rssMb, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { childrenCpuMicros, cpuMicros, summarize } from './lib/stats.js';
import os from 'node:os';

const CONCURRENCY = 50;
const HISTORY_LIMIT = 100;

function heapMb() {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 1048576;
}

main(async ({ quick }) => {
  const count = quick ? 200 : 1000;
  const dir = scratchDir();
  const ipcDir = path.join(dir, 'ipc');

  // Baseline first, in the same process: a pool of bare node processes.
  const socketPath = path.join(dir, 'bare.sock');
  const waiting = new Map();
  let nextId = 0;
  const server = createServer((socket) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      text += chunk;
      const nl = text.indexOf('\n');
      if (nl !== -1) waiting.get(JSON.parse(text.slice(0, nl)).id)?.();
    });
  });
  await new Promise((resolve) => server.listen(socketPath, resolve));
  const bareOne = async () => {
    const id = String(nextId++);
    const t0 = performance.now();
    const got = new Promise((resolve) => waiting.set(id, resolve));
    const child = spawn(process.execPath, ['-e', BARE], {
      env: { ...process.env, BENCH_SOCKET: socketPath, BENCH_ID: id },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout.resume();
    child.stderr.resume();
    await got;
    const ms = performance.now() - t0;
    waiting.delete(id);
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    return ms;
  };
  const pool = async (n, one) => {
    const latencies = [];
    let started = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (started < n) {
          started += 1;
          latencies.push(await one());
        }
      }),
    );
    return { seconds: (performance.now() - t0) / 1000, latencies };
  };
  const bareCount = count / 4;
  log(`many tasks: baseline, ${bareCount} bare node processes @ ${CONCURRENCY}`);
  const bareCpu0 = cpuMicros();
  const bareChildCpu0 = childrenCpuMicros();
  const bare = await pool(bareCount, bareOne);
  const bareCpuMs = (cpuMicros() - bareCpu0) / 1000 / bareCount;
  const bareChildCpuMs = perTask(bareChildCpu0, bareCount);
  server.close();

  const broker = new TaskBroker({
    concurrency: CONCURRENCY,
    ipcDir,
    dataDir: path.join(dir, 'data'),
    historyLimit: HISTORY_LIMIT,
    logger: silentLogger,
  });
  await broker.ready;
  const startedAt = new Map();
  const failures = [];
  broker.on('update', (u) => {
    if (u.kind === 'started') startedAt.set(u.taskId, performance.now());
  });
  const batch = async (size) => {
    const latencies = [];
    const t0 = performance.now();
    const handles = Array.from({ length: size }, () => broker.submit({ command: agentPath('sdk-return.mjs') }));
    await Promise.all(
      handles.map(async (task) => {
        try {
          await task.result;
          latencies.push(performance.now() - startedAt.get(task.id));
        } catch (error) {
          // Counted and shown, not fatal: a failure under load is a finding, not a benchmark bug.
          failures.push(
            `${error.reason}: ${error.message.slice(0, 160)}${error.stderrTail ? ` | stderr: ${error.stderrTail.slice(-300)}` : ''}`,
          );
        }
        startedAt.delete(task.id);
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    await broker.onIdle();
    return { seconds, latencies };
  };
  // Warm-up task so module loading is not counted as growth.
  await broker.submit({ command: agentPath('sdk-return.mjs') }).finished;
  await new Promise((resolve) => setTimeout(resolve, 200));
  const fdStart = openFds();
  const rssStart = rssMb();
  const heapStart = heapMb();
  let rssPeak = rssStart;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb())), 50);
  log(`many tasks: broker, warm-up batch of ${count / 5}, then ${count} @ ${CONCURRENCY}`);
  const first = await batch(count / 5);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const heapAfterFirst = heapMb();
  const rssAfterFirst = rssMb();
  const cpu0 = cpuMicros();
  const childCpu0 = childrenCpuMicros();
  const run = await batch(count);
  const brokerCpuMs = (cpuMicros() - cpu0) / 1000 / count;
  const agentCpuMs = perTask(childCpu0, count);
  clearInterval(sampler);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const heapEnd = heapMb();
  const rssEnd = rssMb();
  const fdEnd = openFds();
  const leftoverEndpoints = readdirSync(ipcDir).length;
  await broker.close();
  // The limit (issue 27 item 4): the same bare pool again, now spawned from this process as the broker
  // left it (its heap and mappings: fork() copies the page tables, so spawn costs more in a bigger process).
  await new Promise((resolve) => server.listen(socketPath, resolve));
  log(`many tasks: the bare pool again, from the process the broker ran in`);
  const afterCpu0 = cpuMicros();
  const bareAfter = await pool(bareCount, bareOne);
  const bareAfterCpuMs = (cpuMicros() - afterCpu0) / 1000 / bareCount;
  server.close();

  const lb = summarize(run.latencies);
  const lBare = summarize(bare.latencies);
  const rate = count / run.seconds;
  const bareRate = bareCount / bare.seconds;
  return {
    figure: 5,
    count,
    concurrency: CONCURRENCY,
    failures,
    broker: {
      tasksPerSecond: rate,
      firstBatchTasksPerSecond: count / 5 / first.seconds,
      latency: lb,
      cpuMsPerTask: brokerCpuMs,
      rssStart,
      rssAfterFirst,
      rssPeak,
      rssEnd,
      heapStart,
      heapAfterFirst,
      heapEnd,
      fdStart,
      fdEnd,
      leftoverEndpoints,
    },
    bare: { tasksPerSecond: bareRate, latency: lBare, cpuMsPerTask: bareCpuMs },
    rows: [
      row({
        fig: '5',
        name: `Many tasks: ${count} @ ${CONCURRENCY}, tasks/s`,
        unit: 'tasks/s',
        value: rate,
        baseline: bareRate,
        target: { op: '>=', ratio: 0.85 },
        detail: `baseline: ${bareCount} bare node connect-write-exit processes @ ${CONCURRENCY}; warm-up batch ${(count / 5 / first.seconds).toFixed(1)} tasks/s`,
      }),
      row({
        fig: '5',
        name: 'Many tasks: start → result p50',
        unit: 'ms',
        value: lb.p50,
        baseline: lBare.p50,
        detail: `p99 ${lb.p99.toFixed(0)} vs ${lBare.p99.toFixed(0)} ms (baseline: spawn → line)`,
      }),
      row({
        fig: '5',
        name: 'Many tasks: start → result p99',
        unit: 'ms',
        value: lb.p99,
        baseline: lBare.p99,
        target: { op: '<=', ratio: 1.2 },
      }),
      row({
        fig: '5',
        name: 'Many tasks: broker-process CPU per task',
        unit: 'ms',
        value: brokerCpuMs,
        baseline: bareCpuMs,
        target: { op: '<=', ratio: 1.2 },
        detail:
          'CPU (user + system) of the process running the broker or the baseline pool (spawn, socket, parse, journal, events), over the timed batch, per task',
      }),
      row({
        fig: '5',
        name: "(limit) Many tasks: bare pool spawned from the broker's process afterwards, tasks/s and CPU per task",
        unit: 'tasks/s',
        value: bareCount / bareAfter.seconds,
        baseline: bareRate,
        detail: `CPU per task ${bareAfterCpuMs.toFixed(2)} vs ${bareCpuMs.toFixed(2)} ms before the broker ran (RSS then ${rssEnd.toFixed(0)} MB): what spawn() alone costs at the broker's size; the broker rows against this limit: tasks/s ${(rate / (bareCount / bareAfter.seconds)).toFixed(2)}×, CPU per task ${(brokerCpuMs / bareAfterCpuMs).toFixed(2)}×`,
      }),
      ...(agentCpuMs === undefined || bareChildCpuMs === undefined
        ? []
        : [cpuBoundLimit({ rate, bareRate, agentCpuMs, brokerCpuMs, bareChildCpuMs, bareCpuMs })]),
      row({
        fig: '5',
        name: 'Many tasks: heap after GC, after the run vs after warm-up',
        unit: 'MB',
        value: heapEnd,
        baseline: heapAfterFirst,
        target: { op: '<=', ratio: 1.1 },
        detail: `heap start ${heapStart.toFixed(1)} MB; history limit ${HISTORY_LIMIT}; target: flat (within 10%)`,
      }),
      row({
        fig: '5',
        name: 'Many tasks: RSS after the run vs after warm-up',
        unit: 'MB',
        value: rssEnd,
        baseline: rssAfterFirst,
        target: { op: '<=', ratio: 1.1 },
        detail: `RSS start ${rssStart.toFixed(0)} / after warm-up ${rssAfterFirst.toFixed(0)} / peak ${rssPeak.toFixed(0)} / end ${rssEnd.toFixed(0)} MB; target: flat (within 10%)`,
      }),
      row({
        fig: '5',
        name: 'Many tasks: open fds after the run vs before',
        unit: 'fds',
        value: fdEnd,
        baseline: fdStart,
        target: { op: '<=', ratio: 1 },
        detail: `${leftoverEndpoints} endpoint file(s) left`,
      }),
      {
        fig: '5',
        name: 'Many tasks: tasks that failed',
        unit: 'tasks',
        value: failures.length,
        status: failures.length ? 'FAILED' : 'none',
        detail: failures.length ? `${failures.length} of ${count + count / 5}; first: ${failures[0]}` : `0 of ${count + count / 5}`,
      },
    ],
  };
});

/** CPU per task of the children reaped since `before` (undefined without /proc). */
function perTask(before, tasks) {
  const now = childrenCpuMicros();
  return before === undefined || now === undefined ? undefined : (now - before) / 1000 / tasks;
}

/**
 * The CPU-bound limit (issue 27 item 4): with every core busy, tasks/s can be at most
 * cores ÷ (the agent's own CPU + the broker's CPU per task). The SDK agent costs more CPU than a
 * bare node process before the broker does anything; this row shows what that alone allows.
 */
function cpuBoundLimit({ rate, bareRate, agentCpuMs, brokerCpuMs, bareChildCpuMs, bareCpuMs }) {
  const cores = os.availableParallelism();
  const limitRate = (cores * 1000) / (agentCpuMs + brokerCpuMs);
  const bareLimitRate = (cores * 1000) / (bareChildCpuMs + bareCpuMs);
  return row({
    fig: '5',
    name: "(limit) Many tasks: the agents' own CPU per task, SDK agent vs bare node",
    unit: 'ms',
    value: agentCpuMs,
    baseline: bareChildCpuMs,
    detail:
      `CPU of the reaped agent processes (cutime + cstime) per task; with the broker's ${brokerCpuMs.toFixed(1)} vs the pool's ` +
      `${bareCpuMs.toFixed(1)} ms, ${cores} cores allow at most ${limitRate.toFixed(1)} vs ${bareLimitRate.toFixed(1)} tasks/s ` +
      `(${(limitRate / bareLimitRate).toFixed(2)}×); measured ${rate.toFixed(1)} vs ${bareRate.toFixed(1)} (${(rate / bareRate).toFixed(2)}×), ` +
      `${(rate / limitRate).toFixed(2)}× of the broker's CPU-bound limit`,
  });
}

const BARE = `const s = require('node:net').createConnection(process.env.BENCH_SOCKET, () => s.end(JSON.stringify({ id: process.env.BENCH_ID, data: 'x'.repeat(2048) }) + '\\n'));`;
