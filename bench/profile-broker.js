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
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentPath, cleanEnvironment, REPO_DIR, scratchDir } from './lib/env.js';

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dist = path.resolve(arg('dist', path.join(REPO_DIR, 'dist')));
const workload = arg('workload', 'stream');
const count = Number(arg('count', workload === 'tasks' ? 400 : 200_000));
const top = Number(arg('top', 25));

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

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });

let seen = 0;
let cpu0;
let cpu;
if (workload === 'tasks') {
  // Warm-up (module loading, first spawns), then the profiled batch.
  await Promise.all(Array.from({ length: 20 }, () => broker.submit({ command: agentPath('sdk-return.mjs') }).finished));
  cpu0 = process.cpuUsage();
  await session.post('Profiler.start');
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
const { profile } = await session.post('Profiler.stop');
cpu = process.cpuUsage(cpu0);
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
process.stdout.write(`${lines.join('\n')}\n`);
