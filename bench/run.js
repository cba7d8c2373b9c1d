/**
 * `npm run bench`: runs every benchmark module in its own process, one after another, and prints one
 * table; writes it to bench/results/latest.md and latest.json. `--quick` for a short run while
 * developing; `--only=stream,framing` to run some modules; `--repeat=n` (or `--repeat n`) runs each
 * module n times and reports, per row, the run with the median ratio and the min/median/max of the
 * ratio and value over the repeats (a shared machine's noise, shown instead of hidden).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_DIR, cleanEnvironment } from './lib/env.js';
import { consoleTable, markdownTable } from './lib/report.js';
import { combineRepeats } from './lib/repeat.js';

const MODULES = [
  { name: 'overhead', title: 'Task overhead' },
  { name: 'big-result', title: 'Big result' },
  { name: 'stream', title: 'Progress stream' },
  { name: 'framing', title: 'Framing: ours vs ndjson' },
  { name: 'round-trip', title: 'Round trip' },
  { name: 'many-tasks', title: 'Many tasks' },
  { name: 'panel', title: 'Panel under load' },
  { name: 'big-history', title: 'Big history (results out of memory)' },
  { name: 'hub-run', title: '`run` through a hub' },
  { name: 'hub-path', title: 'The hub path: many tasks, MCP' },
  { name: 'hub-answer', title: 'The hub answering while it spawns' },
  { name: 'gateway', title: "The gateway's own cost" },
  { name: 'gateway-tools', title: "The gateway's tool round trip (bridge mode)" },
  { name: 'growth', title: 'How cost grows with history' },
  { name: 'worktree', title: 'Coding tasks: worktree and diff' },
  { name: 'diff-render', title: 'Diff render (a coding task in the panel)' },
  { name: 'acp', title: 'ACP agents: overhead, approvals, acpx' },
  { name: 'fleet', title: 'The fleet (Redis, `backchannel worker`) vs BullMQ alone' },
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const repeatArg = args.find((a) => a.startsWith('--repeat'));
const repeat = Number(repeatArg?.includes('=') ? repeatArg.slice(9) : repeatArg ? args[args.indexOf(repeatArg) + 1] : 1);
if (!Number.isInteger(repeat) || repeat < 1) {
  process.stderr.write('bench: Expected `--repeat` to be a positive integer\n');
  process.exit(2);
}
/** Bound on each module, so a hung benchmark cannot hang the suite. */
const MODULE_LIMIT_MS = quick ? 240_000 : 480_000;

cleanEnvironment();

function runModule(name) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--expose-gc', path.join(BENCH_DIR, `${name}.js`), JSON.stringify({ quick })], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => (out += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), MODULE_LIMIT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
      if (line) return resolve({ ...JSON.parse(line.slice(13)), seconds });
      const why = signal === 'SIGKILL' ? `timed out after ${MODULE_LIMIT_MS / 1000} s` : `exited with ${code ?? signal}`;
      resolve({ error: why, seconds, rows: [] });
    });
  });
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const machine = {
  date: new Date().toISOString(),
  node: process.version,
  platform: `${os.type()} ${os.release()} ${os.arch()}`,
  cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown'}`,
  memoryGb: (os.totalmem() / 2 ** 30).toFixed(1),
  loadBefore: load(),
  mode: quick ? 'quick' : 'full',
};
process.stderr.write(`Backchannel benchmarks (${machine.mode}); node ${machine.node}, ${machine.cpus}, load ${machine.loadBefore}\n`);

const dir = path.join(BENCH_DIR, 'results');
const jsonPath = path.join(dir, 'latest.json');
// --only re-measures some modules and keeps the others' latest results (each result records its own date and load).
const results = only && existsSync(jsonPath) ? (JSON.parse(readFileSync(jsonPath, 'utf8')).results ?? {}) : {};
for (const { name, title } of MODULES) {
  if (only && !only.includes(name)) continue;
  process.stderr.write(`▶ ${title}\n`);
  const loadBefore = load();
  const runs = [];
  for (let i = 0; i < repeat; i++) {
    if (repeat > 1) process.stderr.write(`  repeat ${i + 1} of ${repeat}\n`);
    runs.push(await runModule(name));
  }
  const result = repeat === 1 ? runs[0] : combineRepeats(runs);
  results[name] = { ...result, date: new Date().toISOString(), mode: machine.mode, repeat, load: `${loadBefore} → ${load()}` };
  process.stderr.write(`  done in ${result.seconds.toFixed(0)} s\n`);
}
machine.loadAfter = load();
const rows = [];
for (const { name, title } of MODULES) {
  const result = results[name];
  if (!result) continue;
  if (result.error) rows.push({ fig: '', name: `${title}: not measured`, status: 'ERROR', detail: result.error });
  rows.push(...result.rows);
}

const growth = results.growth?.table ? `\n\nHow cost grows with history (bench/growth.js):\n\n${results.growth.table}\n` : '';
const table = consoleTable(rows);
process.stdout.write(`\n${table}\n${growth}\nload average before ${machine.loadBefore}, after ${machine.loadAfter}\n`);

mkdirSync(dir, { recursive: true });
const perModule = Object.entries(results)
  .map(
    ([name, r]) =>
      `- ${name}: ${r.date ?? machine.date}, ${r.mode ?? machine.mode}, ${r.seconds?.toFixed(0) ?? '?'} s, load ${r.load ?? '?'}`,
  )
  .join('\n');
const header = `# Backchannel benchmark results\n\nTable assembled ${machine.date} · Node ${machine.node} · ${machine.platform} · ${machine.cpus} · ${machine.memoryGb} GB · load average ${machine.loadBefore} → ${machine.loadAfter}\n\nProduced by \`npm run bench${quick ? ' -- --quick' : ''}\`; see docs/performance.md for what each row means.\n\nModules (date, mode, duration, load average before → after):\n\n${perModule}\n\n`;
writeFileSync(path.join(dir, 'latest.md'), `${header}${markdownTable(rows)}\n${growth}`);
writeFileSync(jsonPath, `${JSON.stringify({ machine, rows, results }, null, 2)}\n`);
process.stderr.write(`wrote bench/results/latest.md and latest.json\n`);
