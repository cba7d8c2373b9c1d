#!/usr/bin/env node
/**
 * `npm run soak`: a bounded load and soak of the real broker (dist/), reporting tasks/s, RSS over
 * time, fds and anything left behind. Exits non-zero when a check fails.
 *
 *   node scripts/soak.js [--tasks 1000] [--concurrency 50] [--minutes 3] [--skip-load] [--skip-soak]
 *
 * 1. Load: --tasks tasks at --concurrency with mixed outcomes (70 % success, 10 % error, 10 % crash,
 *    10 % timeout). Every task must end exactly once with the outcome its agent chose, the journal
 *    (read back by a fresh broker) must agree with the API, and no socket file or process may remain.
 * 2. Soak: --minutes of continuous mixed tasks (plus chatty ones) at --concurrency, sampled every
 *    10 s; at the end, after a GC, heap, fds, sockets and processes are compared with the start.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { TaskBroker, silentLogger } from '../dist/broker/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AGENT = path.join(ROOT, 'test/fixtures/load-agent.mjs');
const CHATTY = path.join(ROOT, 'test/fixtures/sdk-progress.mjs');
const MiB = 1024 * 1024;

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`Expected --${name} to be a positive number, got ${process.argv[at + 1]}`);
  return value;
}
const TASKS = option('tasks', 1000);
const CONCURRENCY = option('concurrency', 50);
const MINUTES = option('minutes', 3);
const SKIP_LOAD = process.argv.includes('--skip-load');
const SKIP_SOAK = process.argv.includes('--skip-soak');

const MODES = ['success', 'success', 'success', 'success', 'success', 'success', 'success', 'error', 'crash', 'hang'];
const EXPECTED = { success: 'succeeded/', error: 'failed/error', crash: 'failed/crashed', hang: 'failed/timeout', chatty: 'succeeded/' };
const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  return ok;
};

for (const name of ['NODE_OPTIONS', 'NODE_V8_COVERAGE', 'NODE_DEBUG']) delete process.env[name];

function specFor(mode, n) {
  if (mode === 'chatty') return { command: CHATTY, input: { n } };
  return { command: AGENT, args: [mode], input: { n }, ...(mode === 'hang' ? { timeoutMs: 1500 } : {}) };
}

/** Live processes reporting to an endpoint in `ipcDir` (sub-agents and their descendants). */
function agentProcesses(ipcDir) {
  const needle = Buffer.from(`CURSOR_IPC_PATH=${ipcDir}/`);
  let count = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`);
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (environ.includes(needle) && !/\) [ZX] /.test(stat)) count += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}
const fds = () => readdirSync('/proc/self/fd').length;
const files = (dir) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
const mib = (bytes) => `${(bytes / MiB).toFixed(0)} MiB`;
const say = (text) => process.stdout.write(`${text}\n`);

function newBroker(root, name) {
  return new TaskBroker({
    ipcDir: path.join(root, `${name}-ipc`),
    dataDir: path.join(root, `${name}-data`),
    concurrency: CONCURRENCY,
    logger: silentLogger,
    cancelGraceMs: 200,
    killGraceMs: 200,
    drainMs: 300,
  });
}

async function loadPhase(root) {
  say(`\n== load: ${TASKS} tasks at concurrency ${CONCURRENCY} (70% success, 10% error, 10% crash, 10% timeout)`);
  const broker = newBroker(root, 'load');
  await broker.ready;
  const ended = new Map();
  broker.on('update', (u) => u.kind === 'ended' && ended.set(u.taskId, (ended.get(u.taskId) ?? 0) + 1));
  const rssStart = process.memoryUsage.rss();
  let rssPeak = rssStart;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage.rss())), 200);
  const started = Date.now();
  const tasks = Array.from({ length: TASKS }, (_, n) => {
    const mode = MODES[n % MODES.length];
    return { mode, n, handle: broker.submit(specFor(mode, n)) };
  });
  await Promise.all(tasks.map((t) => t.handle.result.catch(() => {})));
  await broker.onIdle();
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);

  const api = new Map(broker.tasks().map((t) => [t.id, t]));
  let wrong = 0;
  for (const { mode, handle } of tasks) {
    const snap = api.get(handle.id);
    if (!snap || `${snap.state}/${snap.reason ?? ''}` !== EXPECTED[mode] || ended.get(handle.id) !== 1) wrong += 1;
  }
  check(api.size === TASKS, `load: the API lists ${api.size} tasks, expected ${TASKS}`);
  check(wrong === 0, `load: ${wrong} task(s) without exactly one final state of the expected kind`);
  const ipcDir = broker.endpointDir;
  await broker.close();
  check(files(ipcDir).length === 0, `load: files left in the endpoint directory: ${files(ipcDir).join(', ')}`);
  check(agentProcesses(ipcDir) === 0, 'load: sub-agent processes left running');

  const reader = newBroker(root, 'load');
  await reader.ready;
  let disagree = 0;
  for (const snap of reader.tasks()) {
    const live = api.get(snap.id);
    if (
      !live ||
      live.state !== snap.state ||
      live.reason !== snap.reason ||
      JSON.stringify(live.result?.data) !== JSON.stringify(snap.result?.data)
    )
      disagree += 1;
  }
  check(
    reader.tasks().length === TASKS && disagree === 0,
    `load: the journal disagrees with the API on ${disagree} task(s) (${reader.tasks().length} read back)`,
  );
  await reader.close();
  say(
    `   ${TASKS} tasks in ${seconds.toFixed(1)} s = ${(TASKS / seconds).toFixed(1)} tasks/s; RSS ${mib(rssStart)} → peak ${mib(rssPeak)}; ` +
      `each ended once: ${wrong === 0 ? 'yes' : `NO (${wrong})`}; journal = API: ${disagree === 0 ? 'yes' : 'NO'}; left behind: ${files(ipcDir).length} files, ${agentProcesses(ipcDir)} processes`,
  );
  return { seconds, rssPeak };
}

async function soakPhase(root) {
  say(`\n== soak: ${MINUTES} min of continuous tasks at concurrency ${CONCURRENCY}`);
  const broker = newBroker(root, 'soak');
  await broker.ready;
  const ipcDir = broker.endpointDir;
  gc();
  const start = { heap: process.memoryUsage().heapUsed, rss: process.memoryUsage.rss(), fds: fds() };
  const deadline = Date.now() + MINUTES * 60_000;
  const started = Date.now();
  let submitted = 0;
  let done = 0;
  let wrong = 0;
  let inFlight = 0;
  const samples = [];
  let lastDone = 0;
  let lastAt = started;
  say('   time    done   tasks/s   RSS       heap (after GC)   fds   agents');
  const sample = () => {
    gc();
    const now = Date.now();
    const row = {
      t: Math.round((now - started) / 1000),
      done,
      rate: (done - lastDone) / ((now - lastAt) / 1000),
      rss: process.memoryUsage.rss(),
      heap: process.memoryUsage().heapUsed,
      fds: fds(),
      agents: agentProcesses(ipcDir),
    };
    lastDone = done;
    lastAt = now;
    samples.push(row);
    say(
      `   ${String(row.t).padStart(4)} s  ${String(row.done).padStart(6)}  ${row.rate.toFixed(1).padStart(7)}   ${mib(row.rss).padEnd(8)}  ${mib(row.heap).padEnd(16)}  ${String(row.fds).padStart(4)}  ${String(row.agents).padStart(5)}`,
    );
  };
  const timer = setInterval(sample, 10_000);
  await new Promise((resolve) => {
    const next = () => {
      while (inFlight < CONCURRENCY && Date.now() < deadline) {
        const n = submitted++;
        const mode = n % 20 === 19 ? 'chatty' : MODES[n % MODES.length];
        const handle = broker.submit(specFor(mode, n));
        inFlight += 1;
        handle.finished.then(() => {
          const snap = handle.snapshot();
          if (`${snap.state}/${snap.reason ?? ''}` !== EXPECTED[mode]) wrong += 1;
          inFlight -= 1;
          done += 1;
          if (Date.now() < deadline) next();
          else if (inFlight === 0) resolve();
        });
      }
    };
    next();
  });
  clearInterval(timer);
  await broker.onIdle();
  sample();
  const seconds = (Date.now() - started) / 1000;
  const end = samples.at(-1);
  // History is bounded (1,000 tasks): compare with the first sample taken after it filled up.
  const settled = samples.find((s) => s.done > 1000) ?? samples[0];
  const heapGrowth = end.heap - settled.heap;
  check(wrong === 0, `soak: ${wrong} task(s) ended differently than their agent chose`);
  check(end.fds <= start.fds + 2, `soak: fds grew from ${start.fds} to ${end.fds}`);
  check(end.agents === 0, `soak: ${end.agents} sub-agent processes left running`);
  check(files(ipcDir).length === 0, `soak: files left in the endpoint directory: ${files(ipcDir).join(', ')}`);
  check(heapGrowth < 16 * MiB, `soak: heap grew by ${mib(heapGrowth)} after history filled up (leak?)`);
  await broker.close();
  const peakRss = Math.max(start.rss, ...samples.map((s) => s.rss));
  say(
    `   ${done} tasks in ${seconds.toFixed(0)} s = ${(done / seconds).toFixed(1)} tasks/s; RSS ${mib(start.rss)} → peak ${mib(peakRss)}; ` +
      `heap after GC ${mib(start.heap)} at start, ${mib(settled.heap)} at ${settled.t} s, ${mib(end.heap)} at end; fds ${start.fds} → ${end.fds}; wrong outcomes ${wrong}`,
  );
}

const root = mkdtempSync(path.join(os.tmpdir(), 'bc-soak-'));
try {
  say(
    `Backchannel soak on ${os.cpus().length} cores (load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}), Node ${process.version}`,
  );
  if (!SKIP_LOAD) await loadPhase(root);
  if (!SKIP_SOAK) await soakPhase(root);
} finally {
  rmSync(root, { recursive: true, force: true });
}
if (failures.length > 0) {
  say(`\nFAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  process.exitCode = 1;
} else {
  say('\nOK: nothing lost, nothing left behind, no leak.');
}
