/**
 * Two builds' brokers in one process, their batches alternated: the broker's process CPU per task of
 * each, measured in the same minutes. On a shared, loaded machine a before/after of figure 5 run as
 * two processes minutes apart moves with the load more than with the change; here both sides see the
 * same load, batch by batch (issue 48, docs/performance.md "Issue 48: per-task CPU").
 *
 *   node bench/profile-ab-tasks.js --builds=<before>/dist,dist [--rounds=6] [--size=100]
 *
 * Each build's `dist/` is imported as its own module graph (its own spawner thread); a build outside
 * the repository needs a `node_modules` beside its `dist/` (a symlink to this one's will do).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentPath, cleanEnvironment, REPO_DIR, scratchDir } from './lib/env.js';

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const builds = arg('builds', 'dist,dist')
  .split(',')
  .map((dir) => path.resolve(REPO_DIR, dir));
const rounds = Number(arg('rounds', 6));
const size = Number(arg('size', 100));

cleanEnvironment();
const brokers = [];
for (const dist of builds) {
  const { TaskBroker, silentLogger } = await import(pathToFileURL(path.join(dist, 'broker/index.js')).href);
  const dir = scratchDir();
  const broker = new TaskBroker({
    concurrency: 50,
    ipcDir: path.join(dir, 'ipc'),
    dataDir: path.join(dir, 'data'),
    historyLimit: 100,
    logger: silentLogger,
  });
  await broker.ready;
  brokers.push(broker);
}
const batch = (broker, n) => Promise.all(Array.from({ length: n }, () => broker.submit({ command: agentPath('sdk-return.mjs') }).finished));
// Warm-up: module loading and the first spawns are not counted.
for (const broker of brokers) await batch(broker, size);
const cpu = builds.map(() => []);
for (let round = 0; round < rounds; round++) {
  // ABAB… then BABA…: neither side always runs first.
  const order = brokers.map((_, i) => (round % 2 === 0 ? i : brokers.length - 1 - i));
  for (const i of order) {
    const before = process.cpuUsage();
    await batch(brokers[i], size);
    const used = process.cpuUsage(before);
    cpu[i].push((used.user + used.system) / size / 1000);
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const lines = builds.map(
  (dist, i) =>
    `${path.relative(REPO_DIR, dist) || '.'}: median ${median(cpu[i]).toFixed(2)} ms/task; batches ${cpu[i].map((x) => x.toFixed(2)).join(' ')}`,
);
if (builds.length === 2) {
  const pairs = cpu[1].map((x, k) => (x / cpu[0][k]).toFixed(2)).join(' ');
  lines.push(`second ÷ first (medians): ${(median(cpu[1]) / median(cpu[0])).toFixed(3)}; batch by batch: ${pairs}`);
}
process.stdout.write(`${lines.join('\n')}\n`);
for (const broker of brokers) await broker.close();
