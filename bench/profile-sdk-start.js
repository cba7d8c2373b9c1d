/**
 * What an SDK agent's start costs beyond a bare `node` (figure 1, issue 27 item 4), piece by piece.
 * Each figure is the CPU time (process.cpuUsage, so a shared machine's waiting is left out) of one
 * step in a fresh `node` process (bench/lib/start-step.mjs: a file module that has loaded node:net and
 * made one dynamic import, as the bare agent does), median over `--runs` processes, interleaved:
 *
 * - `import <x>`: importing one module (a builtin, the SDK bundle by path, the SDK by its package name);
 * - `process.stdout + stderr`: making the two stdio streams (pipes here, as under the broker);
 * - `new AbortController()`: the task's cancel signal.
 *
 *   node bench/profile-sdk-start.js [--runs=40] [--bundle=<file>]...
 *
 * Extra `--bundle=` files (an older build of dist/agent-runtime/bundle.js) are measured beside it.
 * bench/profiles/sdk-start.txt keeps a run's output.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, REPO_DIR } from './lib/env.js';

const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 40);
const bundles = process.argv.filter((a) => a.startsWith('--bundle=')).map((a) => path.resolve(a.slice(9)));

const steps = [
  ['nothing (the warm-up only)', 'none'],
  ['import an empty module', `import ${pathToFileURL(path.join(BENCH_DIR, 'lib/empty.mjs')).href}`],
  ['import node:fs', 'import node:fs'],
  ['import node:buffer', 'import node:buffer'],
  ['import node:path', 'import node:path'],
  ['import the SDK bundle by path', `import ${pathToFileURL(path.join(REPO_DIR, 'dist/agent-runtime/bundle.js')).href}`],
  ...bundles.map((file) => [`import ${path.relative(REPO_DIR, file)} by path`, `import ${pathToFileURL(file).href}`]),
  ["import 'backchannel-agents/agent-runtime' (the package's exports map)", 'import backchannel-agents/agent-runtime'],
  ['process.stdout + process.stderr (pipes)', 'stdio'],
  ['new AbortController().signal', 'abort'],
];

const samples = new Map(steps.map(([, step]) => [step, []]));
const loadBefore = os.loadavg();
for (let i = 0; i < runs; i++) {
  for (const [, step] of steps) {
    const out = execFileSync(process.execPath, [path.join(BENCH_DIR, 'lib/start-step.mjs'), step], { stdio: ['ignore', 'pipe', 'pipe'] });
    samples.get(step).push(Number(out.toString()));
  }
}
const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
const base = median(samples.get('none'));
const load = (l) => l.map((x) => x.toFixed(1)).join(' ');
console.log(`SDK start, CPU per step: ${runs} processes each, node ${process.version}, load ${load(loadBefore)} → ${load(os.loadavg())}`);
console.log('  CPU ms (p50, less the warm-up)  step');
for (const [label, step] of steps) {
  const value = median(samples.get(step));
  console.log(`  ${(step === 'none' ? value : value - base).toFixed(2).padStart(8)}  ${label}`);
}
