/**
 * The fleet (docs/scale-out.md) against BullMQ alone: `count` I/O-bound agents
 * (bench/agents/sleep-return.sh: 200 ms asleep, then one stdout payload) through a private
 * redis-server, a TaskBroker with a Redis queue and 1, 2 and 4 `backchannel worker` processes
 * (PER_WORKER agents each), so the workers' concurrency, not the cores, bounds tasks/s. The same
 * agents through a raw BullMQ Queue + Worker process that runs the agent and returns its stdout, with
 * 1 and 4 worker processes. Rows: tasks/s and queue-to-start p50/p99 (submit → the agent's own start
 * time), and Redis commands per task from INFO commandstats.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { TaskBroker, silentLogger } from '../dist/broker/index.js';
import { redisQueue } from '../dist/fleet/index.js';
import { agentPath, log, REPO_DIR, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { percentile } from './lib/stats.js';

const AGENT = agentPath('sleep-return.sh');
const RAW_WORKER = path.join(REPO_DIR, 'bench/peers/bullmq-worker.mjs');
const BIN = path.join(REPO_DIR, 'bin/backchannel.js');
/** Agents at once per worker process: 1 worker runs at most 8 / 0.2 s = 40 tasks/s, 4 workers 160. */
const PER_WORKER = 8;
const WORKER_COUNTS = [1, 2, 4];
const RAW_COUNTS = [1, 4];
const START_LIMIT_MS = 60_000;

/** Children still running at exit are killed (a failed run must not leave Redis or workers behind). */
const children = new Set();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Starts `argv` and resolves once its output holds `text`. */
function startChild(argv, text, env = process.env) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
  children.add(child);
  child.on('exit', () => children.delete(child));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${argv[1] ?? argv[0]} did not start in time: ${out.slice(-500)}`)), START_LIMIT_MS);
    const seen = (chunk) => {
      out += chunk;
      if (!out.includes(text)) return;
      clearTimeout(timer);
      resolve(child);
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.once('exit', (code) => reject(new Error(`${argv[0]} exited with ${code}: ${out.slice(-500)}`)));
  });
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return exited.finally(() => clearTimeout(timer));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** INFO commandstats: the calls per command, and under `usec` the microseconds Redis spent in all of them. */
async function commandStats(client) {
  const text = await client.info('commandstats');
  const calls = {};
  let usec = 0;
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    calls[match[1]] = Number(match[2]);
    usec += Number(match[3]);
  }
  return { calls, usec };
}

/** Commands per task between two commandstats readings (the reading's own INFO left out), and the top 4. */
function perTask(before, after, count) {
  const diff = Object.entries(after.calls)
    .map(([name, calls]) => [name, calls - (before.calls[name] ?? 0) - (name === 'info' ? 1 : 0)])
    .filter(([, calls]) => calls > 0)
    .sort((a, b) => b[1] - a[1]);
  const total = diff.reduce((sum, [, calls]) => sum + calls, 0) / count;
  return {
    total,
    usec: (after.usec - before.usec) / count,
    top: diff
      .slice(0, 4)
      .map(([name, calls]) => `${name} ${(calls / count).toFixed(1)}`)
      .join(', '),
  };
}

/** CPU ms the worker processes used themselves (utime + stime, not their agents'), from /proc. */
function workersCpuMs(workers) {
  let ticks = 0;
  for (const child of workers) {
    const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

/** CPU per task: the worker processes' own, and this process's (the broker, or the raw Queue's client). */
function cpuPerTask(workers, cpu0, own0, count) {
  const own = process.cpuUsage(own0);
  return { workerCpuMs: (workersCpuMs(workers) - cpu0) / count, clientCpuMs: (own.user + own.system) / 1000 / count };
}

/** tasks/s and queue-to-start over one batch: `submitAt[i]` and `startedMs[i]` are epoch milliseconds. */
function figures(count, seconds, submitAt, startedMs) {
  const waits = startedMs.map((started, i) => started - submitAt[i]);
  return { rate: count / seconds, p50: percentile(waits, 50), p99: percentile(waits, 99) };
}

async function throughBackchannel(redisUrl, workers, count, dir, stats) {
  const queue = `fleet-${workers}`;
  const env = { ...process.env, CURSOR_IPC_DIR: path.join(dir, `ipc-${workers}`) };
  const started = await Promise.all(
    Array.from({ length: workers }, (_, i) =>
      startChild(
        [
          process.execPath,
          BIN,
          'worker',
          '--redis',
          redisUrl,
          '--queue',
          queue,
          '--name',
          `w${i}`,
          '--concurrency',
          String(PER_WORKER),
          '--allow',
          AGENT,
        ],
        'taking tasks from',
        env,
      ),
    ),
  );
  const broker = new TaskBroker({
    queue: redisQueue({ redis: redisUrl, name: queue }),
    ipcDir: path.join(dir, `b-${workers}`),
    logger: silentLogger,
  });
  try {
    // Warm-up: every worker has taken jobs and the broker's events reader runs.
    await Promise.all(Array.from({ length: workers * PER_WORKER }, () => broker.submit({ command: AGENT }).result));
    const before = await commandStats(stats);
    const [cpu0, own0] = [workersCpuMs(started), process.cpuUsage()];
    const submitAt = [];
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: count }, () => {
        submitAt.push(Date.now());
        return broker.submit({ command: AGENT }).result;
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuPerTask(started, cpu0, own0, count);
    const commands = perTask(before, await commandStats(stats), count);
    return {
      ...figures(
        count,
        seconds,
        submitAt,
        results.map((r) => r.data.started_ms),
      ),
      commands,
      ...cpu,
    };
  } finally {
    await broker.close();
    await Promise.all(started.map(stopChild));
  }
}

async function throughRawBullmq(redisUrl, workers, count, stats) {
  const name = `raw-${workers}`;
  const started = await Promise.all(
    Array.from({ length: workers }, () => startChild([process.execPath, RAW_WORKER, redisUrl, name, String(PER_WORKER), AGENT], 'ready')),
  );
  const { hostname, port } = new URL(redisUrl);
  const connection = { host: hostname, port: Number(port), maxRetriesPerRequest: null };
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await events.waitUntilReady();
  const waiting = new Map();
  events.on('completed', ({ jobId, returnvalue }) => {
    const text = typeof returnvalue === 'string' && returnvalue.startsWith('"') ? JSON.parse(returnvalue) : String(returnvalue);
    waiting.get(jobId)?.(JSON.parse(text.slice(text.indexOf('{'))));
  });
  const run = async (id) => {
    const done = new Promise((resolve) => waiting.set(id, resolve));
    await queue.add('agent', {}, { jobId: id, attempts: 1, removeOnComplete: { age: 3600 }, removeOnFail: { age: 3600 } });
    return done;
  };
  try {
    await Promise.all(Array.from({ length: workers * PER_WORKER }, (_, i) => run(`warm-${i}`)));
    const before = await commandStats(stats);
    const [cpu0, own0] = [workersCpuMs(started), process.cpuUsage()];
    const submitAt = [];
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) => {
        submitAt.push(Date.now());
        return run(`job-${i}`);
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuPerTask(started, cpu0, own0, count);
    const commands = perTask(before, await commandStats(stats), count);
    return {
      ...figures(
        count,
        seconds,
        submitAt,
        results.map((r) => r.data.started_ms),
      ),
      commands,
      ...cpu,
    };
  } finally {
    await events.close();
    await queue.close();
    await Promise.all(started.map(stopChild));
  }
}

const load = () => os.loadavg()[0].toFixed(1);

main(async ({ quick }) => {
  const count = quick ? 200 : 1000;
  const dir = scratchDir('bcb-fleet-');
  const port = await freePort();
  const redisServer = await startChild(
    ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    'Ready to accept connections',
  );
  const redisUrl = `redis://127.0.0.1:${port}`;
  const stats = new Redis(redisUrl);
  const bc = {};
  const raw = {};
  try {
    for (const workers of WORKER_COUNTS) {
      log(`fleet: ${count} agents, ${workers} backchannel worker(s) × ${PER_WORKER} (load ${load()})`);
      bc[workers] = await throughBackchannel(redisUrl, workers, count, dir, stats);
      if (RAW_COUNTS.includes(workers)) {
        log(`fleet: ${count} agents, ${workers} raw BullMQ worker(s) × ${PER_WORKER} (load ${load()})`);
        raw[workers] = await throughRawBullmq(redisUrl, workers, count, stats);
      }
    }
  } finally {
    stats.disconnect();
    await stopChild(redisServer);
  }
  return { figure: 'fleet', count, perWorker: PER_WORKER, backchannel: bc, raw, rows: fleetRows(count, bc, raw) };
});

function fleetRows(count, bc, raw) {
  const rows = [];
  for (const workers of WORKER_COUNTS) {
    const f = bc[workers];
    const bound = (workers * PER_WORKER) / 0.2;
    rows.push(
      row({
        fig: 'fleet',
        name: `${count} agents of 200 ms, ${workers} worker(s) × ${PER_WORKER}: tasks/s vs 1 worker`,
        unit: 'tasks/s',
        value: f.rate,
        baseline: bc[1].rate,
        target: workers === 4 ? { op: '>=', ratio: 3.5 } : undefined,
        detail: `queue-to-start p50 ${f.p50.toFixed(0)} ms, p99 ${f.p99.toFixed(0)} ms; the workers' bound ${bound} tasks/s; Redis commands/task ${f.commands.total.toFixed(1)} (${f.commands.top}), Redis CPU/task ${f.commands.usec.toFixed(0)} µs; CPU per task: the workers' own ${f.workerCpuMs.toFixed(2)} ms, the broker ${f.clientCpuMs.toFixed(2)} ms`,
      }),
    );
  }
  for (const workers of RAW_COUNTS) {
    const [f, r] = [bc[workers], raw[workers]];
    rows.push(
      row({
        fig: 'fleet',
        name: `Backchannel vs a raw BullMQ Queue + Worker, ${workers} worker(s) × ${PER_WORKER}`,
        unit: 'tasks/s',
        value: f.rate,
        baseline: r.rate,
        target: { op: '>=', ratio: 0.9 },
        detail: `raw queue-to-start p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms (Backchannel ${f.p50.toFixed(0)} / ${f.p99.toFixed(0)} ms); CPU per task: worker processes ${f.workerCpuMs.toFixed(2)} vs ${r.workerCpuMs.toFixed(2)} ms, submitting side (broker vs Queue client) ${f.clientCpuMs.toFixed(2)} vs ${r.clientCpuMs.toFixed(2)} ms`,
      }),
      row({
        fig: 'fleet',
        name: `(context) Redis commands per task, Backchannel vs raw BullMQ, ${workers} worker(s)`,
        unit: 'commands',
        value: f.commands.total,
        baseline: r.commands.total,
        detail: `Redis's own time in them per task ${f.commands.usec.toFixed(0)} vs ${r.commands.usec.toFixed(0)} µs (INFO commandstats usec); Backchannel: ${f.commands.top}; raw: ${r.commands.top}`,
      }),
    );
  }
  return rows;
}
