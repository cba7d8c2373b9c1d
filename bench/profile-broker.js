/**
 * A CPU profile of the broker, as text. `--workload=stream` (default): one SDK agent streams `count`
 * partials (figure 3's workload) into a TaskBroker with a history journal, profiled from the first to
 * the last partial. `--workload=tasks`: `count` SDK agents that return at once, 50 at a time, through
 * a broker with a journal (figure 5's workload), profiled over the whole batch. The broker process is
 * profiled in process (node:inspector) and the functions with the most self time are printed,
 * grouped by function and file.
 *
 *   node bench/profile-broker.js [--workload=stream|tasks] [--dist=<dir with broker/index.js>] [--count=200000|400] [--top=25]
 *
 * bench/profiles/broker-per-message.txt and broker-per-task.txt keep the summaries before and after issue 13's changes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentPath, cleanEnvironment, REPO_DIR, scratchDir } from './lib/env.js';

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dist = path.resolve(arg('dist', path.join(REPO_DIR, 'dist')));
const workload = arg('workload', 'stream');
const count = Number(arg('count', workload === 'tasks' ? 400 : 200_000));
const top = Number(arg('top', 25));
/** `--no-profile`: the CPU by thread alone, without the profiler's own sampling thread. */
const profiling = !process.argv.includes('--no-profile');

cleanEnvironment();
const { TaskBroker, silentLogger } = await import(pathToFileURL(path.join(dist, 'broker/index.js')).href);
const dir = scratchDir();
const concurrency = workload === 'tasks' ? 50 : 1;
const broker = new TaskBroker({
  concurrency,
  ipcDir: path.join(dir, 'ipc'),
  dataDir: path.join(dir, 'data'),
  historyLimit: 100,
  logger: silentLogger,
});
await broker.ready;
const threadsAtReady = new Set(threadCpu().keys());

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });

let seen = 0;
let cpu0;
let cpu;
let threads0;
if (workload === 'tasks') {
  // Warm-up (module loading, first spawns), then the profiled batch.
  await Promise.all(Array.from({ length: 20 }, () => broker.submit({ command: agentPath('sdk-return.mjs') }).finished));
  cpu0 = process.cpuUsage();
  threads0 = threadCpu();
  if (profiling) await session.post('Profiler.start');
  const handles = Array.from({ length: count }, () => broker.submit({ command: agentPath('sdk-return.mjs') }));
  await Promise.all(handles.map((h) => h.finished));
  seen = count;
} else {
  let started = false;
  const task = broker.submit({ command: agentPath('sdk-stream.mjs'), input: { count, burst: 100 } });
  await new Promise((resolve) => {
    broker.on('update', (update) => {
      if (update.taskId !== task.id || update.kind !== 'partial') return;
      if (!started) {
        started = true;
        cpu0 = process.cpuUsage();
        void session.post('Profiler.start');
      }
      if (++seen === count) resolve();
    });
  });
  await task.result;
}
const { profile } = profiling ? await session.post('Profiler.stop') : { profile: { samples: [], nodes: [], startTime: 0, endTime: 0 } };
cpu = process.cpuUsage(cpu0);
const threads1 = threadCpu();
await broker.close();

// Self time per function: hit counts × the mean sampling interval.
const totalSamples = profile.samples.length;
const micros = profile.endTime - profile.startTime;
const bySelf = new Map();
for (const node of profile.nodes) {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url ? path.relative(REPO_DIR, url.replace(/^file:\/\//, '')) : '';
  const key = `${functionName || '(anonymous)'}  ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
  bySelf.set(key, (bySelf.get(key) ?? 0) + (node.hitCount ?? 0));
}
const rows = [...bySelf.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
const usPerUnit = (cpu.user + cpu.system) / seen;
const unit = workload === 'tasks' ? 'task' : 'msg';
const lines = [
  `broker ${workload === 'tasks' ? 'per-task' : 'per-message'} profile: ${seen} ${workload === 'tasks' ? 'tasks @ 50' : 'partials'}, dist ${path.relative(REPO_DIR, dist) || '.'}, node ${process.version}`,
  `broker CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms = ${usPerUnit.toFixed(2)} µs/${unit} over ${(micros / 1000).toFixed(0)} ms; ${totalSamples} samples`,
  '',
  ' self %  function  (file:line)',
  ...rows.map(([key, hits]) => `${((hits / totalSamples) * 100).toFixed(1).padStart(6)}  ${key}`),
];
if (threads0) lines.push('', ...threadLines(threads0, threads1, seen, unit));
process.stdout.write(`${lines.join('\n')}\n`);

/** CPU (user + system, µs) of each of this process's threads, by tid (Linux /proc; empty elsewhere). */
function threadCpu() {
  const out = new Map();
  let tids;
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  const tick = 1e6 / 100; // CLK_TCK is 100 on Linux
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out;
}

/**
 * The process's CPU by thread over the profiled batch: the main thread (tid = pid), the threads that
 * started after broker.ready (the spawner thread), and the rest (libuv's pool, V8's GC helpers).
 */
function threadLines(before, after, n, per) {
  const groups = { main: 0, 'started after ready (spawner thread)': 0, 'others (libuv pool, V8 helpers)': 0 };
  for (const [tid, us] of after) {
    const delta = us - (before.get(tid) ?? 0);
    if (tid === process.pid) groups.main += delta;
    else if (!threadsAtReady.has(tid)) groups['started after ready (spawner thread)'] += delta;
    else groups['others (libuv pool, V8 helpers)'] += delta;
  }
  return [
    'CPU by thread (/proc/self/task, 10 ms ticks):',
    ...Object.entries(groups).map(([name, us]) => `  ${(us / n).toFixed(0).padStart(6)} µs/${per}  ${name}`),
  ];
}
