/**
 * What the panel's long tasks are (figure 6, issue 27 item 4): the panel bench's setup (`backchannel
 * serve`'s headless stack in this process, the panel in headless Chromium, 200 tasks each reporting
 * progress 5×/s), then a Chromium trace of the page over the same 10 s window — the timeline (tasks,
 * script, style, layout, paint, GC) and V8's sampling profiler — beside the page's own
 * PerformanceObserver('longtask'). Every task of the renderer's main thread over 50 ms is printed
 * with what ran inside it: the trace events by self time, and the profiler's JS functions.
 *
 *   node bench/profile-panel.js [--window=10000] [--trace=<file.json.gz>] [--top=12]
 *
 * bench/profiles/panel-long-tasks.txt keeps a run's summary; the trace it came from is beside it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { agentPath, cleanEnvironment, REPO_DIR, scratchDir } from './lib/env.js';
import { launchChromium } from './lib/browser.js';

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const windowMs = Number(arg('window', 10_000));
const tracePath = arg('trace', '');
const top = Number(arg('top', 12));
const TASKS = 200;

cleanEnvironment();
const startPath = path.join(REPO_DIR, 'dist/hub/headless/start.js');
if (!existsSync(startPath)) throw new Error('build first: npm run build (dist/hub/headless/start.js is missing)');
const { startHeadless } = await import(startPath);
const dir = scratchDir();
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const loadBefore = load();
const headless = await startHeadless({
  port: 0,
  dataDir: path.join(dir, 'data'),
  ipcDir: path.join(dir, 'ipc'),
  concurrency: TASKS,
  consoleLevel: false,
});
const browser = await launchChromium();
let out = '';
const say = (text = '') => {
  // The panel's URLs carry its session token: not kept in a file.
  const line = text.replace(/\?token=[0-9a-f]+/g, '');
  out += `${line}\n`;
  process.stdout.write(`${line}\n`);
};
try {
  const page = await browser.newPage();
  await page.goto(headless.url);
  await page.waitForSelector('#task-list', { state: 'attached' });
  const running = new Set();
  let partials = 0;
  headless.broker.on('update', (u) => {
    if (u.kind === 'started') running.add(u.taskId);
    else if (u.kind === 'partial') partials += 1;
  });
  const handles = Array.from({ length: TASKS }, (_, i) =>
    headless.broker.submit({ command: agentPath('panel-ticker.mjs'), input: { ticks: 100_000, intervalMs: 200 }, label: `ticker ${i}` }),
  );
  const deadline = Date.now() + 120_000;
  while ((running.size < TASKS || partials < TASKS * 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  await page.waitForFunction((n) => document.querySelectorAll('li.task').length >= n, TASKS, { timeout: 60_000 });

  const categories = [
    'devtools.timeline',
    'disabled-by-default-devtools.timeline',
    'disabled-by-default-devtools.timeline.frame',
    'toplevel',
    'blink.user_timing',
    'v8',
    'v8.execute',
    'disabled-by-default-v8.gc',
    'disabled-by-default-v8.cpu_profiler',
  ];
  await browser.startTracing(page, { categories });
  const inPage = await page.evaluate(
    (ms) =>
      new Promise((resolve) => {
        const long = [];
        const observer = new PerformanceObserver((list) => {
          for (const e of list.getEntries())
            long.push({ start: e.startTime, duration: e.duration, attribution: e.attribution?.map((a) => a.name) });
        });
        observer.observe({ type: 'longtask' });
        setTimeout(() => {
          observer.disconnect();
          resolve({ long, timeOrigin: performance.timeOrigin });
        }, ms);
      }),
    windowMs,
  );
  const trace = await browser.stopTracing();
  for (const handle of handles) handle.cancel('profile over');
  if (tracePath) writeFileSync(tracePath, gzipSync(trace.toString('utf8').replace(/token=[0-9a-f]{16,}/g, 'token=redacted')));

  say(
    `panel long-task profile: ${TASKS} tasks × 5 updates/s, ${windowMs / 1000} s window, node ${process.version}, load ${loadBefore} → ${load()}`,
  );
  say(
    `PerformanceObserver('longtask') in the page: ${inPage.long.length} (${inPage.long.map((l) => `${l.duration.toFixed(0)} ms`).join(', ') || 'none'})`,
  );
  summarize(JSON.parse(trace.toString('utf8')));
} finally {
  await browser.close();
  await headless.close();
}

/** The renderer main thread's tasks over 50 ms, and what ran inside each. */
function summarize(trace) {
  const events = trace.traceEvents ?? trace;
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  if (!main) return say('no CrRendererMain thread in the trace');
  const onMain = events.filter((e) => e.pid === main.pid && e.tid === main.tid);
  const complete = onMain.filter((e) => e.ph === 'X' && typeof e.dur === 'number');
  // The outermost task events only (RunTask and ThreadControllerImpl::RunTask nest).
  const nested = complete
    .filter((e) => e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask')
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const tasks = [];
  for (const e of nested) if (!tasks.length || e.ts >= tasks.at(-1).ts + tasks.at(-1).dur) tasks.push(e);
  const all = tasks.map((t) => t.dur / 1000);
  const long = tasks.filter((t) => t.dur > 50_000);
  const t0 = Math.min(...tasks.map((t) => t.ts));
  // tdur is the thread's own clock: a task whose CPU time is far below its wall time waited for a core.
  const cpuMs = (t) => (typeof t.tdur === 'number' ? t.tdur / 1000 : NaN);
  const busy = long.filter((t) => cpuMs(t) > 50);
  say(
    `main-thread tasks in the trace: ${tasks.length}; over 50 ms of wall time: ${long.length}, of which over 50 ms of the thread's CPU time: ${busy.length}; over 16 ms: ${all.filter((d) => d > 16).length}; longest ${Math.max(0, ...all).toFixed(1)} ms`,
  );
  say(`the long ones, wall / CPU ms: ${long.map((t) => `${(t.dur / 1000).toFixed(0)}/${cpuMs(t).toFixed(0)}`).join(', ') || 'none'}`);
  const byCpu = tasks.filter((t) => typeof t.tdur === 'number').sort((a, b) => b.tdur - a.tdur);
  say(
    `the most CPU in one task, ms (wall in brackets): ${byCpu
      .slice(0, 8)
      .map((t) => `${cpuMs(t).toFixed(1)} (${(t.dur / 1000).toFixed(0)})`)
      .join(', ')}`,
  );
  const samples = profileSamples(events, main);
  for (const task of [...new Set([...long, ...byCpu.slice(0, 3)])].sort((a, b) => a.ts - b.ts)) {
    say();
    say(
      `## task at +${((task.ts - t0) / 1e6).toFixed(2)} s: ${(task.dur / 1000).toFixed(1)} ms wall, ${cpuMs(task).toFixed(1)} ms of the main thread's CPU`,
    );
    const inside = complete.filter((e) => e !== task && e.ts >= task.ts && e.ts + e.dur <= task.ts + task.dur);
    say('trace events inside it, by self time (ms):');
    for (const [name, ms] of selfTimes(task, inside).slice(0, top)) say(`  ${ms.toFixed(1).padStart(7)}  ${name}`);
    const js = samples.filter((s) => s.ts >= task.ts && s.ts <= task.ts + task.dur);
    if (js.length > 0) {
      const counts = new Map();
      for (const s of js) counts.set(s.frame, (counts.get(s.frame) ?? 0) + s.dt);
      say(`V8 sampling profiler inside it (${js.length} samples), self time by function (ms):`);
      for (const [frame, us] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top))
        say(`  ${(us / 1000).toFixed(1).padStart(7)}  ${frame}`);
    }
  }
  writeFileSync(arg('summary', path.join(os.tmpdir(), 'panel-long-tasks.txt')), out);
}

/** Self time of every event nested in `task` (its own duration less its children's), grouped by a readable name. */
function selfTimes(task, inside) {
  const nodes = [task, ...inside].sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const self = new Map(nodes.map((e) => [e, e.dur]));
  const stack = [];
  for (const e of nodes) {
    while (stack.length && stack.at(-1).ts + stack.at(-1).dur < e.ts + e.dur) stack.pop();
    const parent = stack.at(-1);
    if (parent) self.set(parent, self.get(parent) - e.dur);
    stack.push(e);
  }
  const byName = new Map();
  for (const [e, us] of self) {
    const data = e.args?.data ?? {};
    const where =
      data.functionName || data.url ? ` ${data.functionName || ''} ${(data.url || '').replace(/^.*\//, '')}:${data.lineNumber ?? ''}` : '';
    const name = `${e.name}${e.name === 'FunctionCall' || e.name === 'EvaluateScript' ? where : ''}`;
    byName.set(name, (byName.get(name) ?? 0) + us / 1000);
  }
  return [...byName].sort((a, b) => b[1] - a[1]);
}

/** V8's CPU profile from the trace (ProfileChunk events of the main thread's isolate), as timed leaf samples. */
function profileSamples(events, main) {
  const nodes = new Map();
  const samples = [];
  let ts = 0;
  for (const e of events) {
    if (e.pid !== main.pid) continue;
    if (e.name === 'Profile') ts = e.args?.data?.startTime ?? ts;
    if (e.name !== 'ProfileChunk') continue;
    const data = e.args?.data ?? {};
    for (const n of data.cpuProfile?.nodes ?? []) {
      const f = n.callFrame ?? {};
      nodes.set(n.id, `${f.functionName || '(anonymous)'} ${(f.url || '').replace(/^.*\//, '')}:${f.lineNumber ?? ''}`.trim());
    }
    const ids = data.cpuProfile?.samples ?? [];
    const deltas = data.timeDeltas ?? [];
    for (let i = 0; i < ids.length; i++) {
      ts += deltas[i] ?? 0;
      samples.push({ ts, dt: deltas[i + 1] ?? 0, id: ids[i] });
    }
  }
  return samples.map((s) => ({ ...s, frame: nodes.get(s.id) ?? `node ${s.id}` }));
}
