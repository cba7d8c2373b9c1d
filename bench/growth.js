/**
 * How cost grows with history (issue 27 item 3): a hub (`backchannel serve --history-limit N`, its
 * own process) over a data directory holding N finished tasks (written by bench/lib/history.js), for
 * N = 1,000, 10,000 and 100,000. Measured at each N: the hub's start (spawn → its panel URL printed,
 * the control endpoint answering), its RSS after start and after serving the list and the panel, the
 * first page of tasks (POST /api/tasks/page) and `backchannel tasks` (the CLI, spawn → exit, through
 * the hub), the event stream's first event (the panel's picture: bytes, and connect → parsed), the
 * panel's first paint in headless Chromium, and the journal's compaction (load + rewrite
 * of N records, in this process, as a start does when the journal has grown). Growth is judged by
 * the step from 10,000 to 100,000 against 10 × the step from 1,000 to 10,000; the 10,000 figures
 * against the issue's limits. The empty history is in the table for the fixed costs.
 */
import { mkdirSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Journal } from '../dist/broker/history/journal.js';
import { silentLogger } from '../dist/broker/index.js';
import { log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { writeHistory } from './lib/history.js';
import { runCli, startServe } from './lib/hub.js';
import { panelPaint } from './lib/panel-paint.js';
import { median } from './lib/stats.js';

main(async ({ quick }) => {
  const sizes = quick ? [1000, 10_000] : [1000, 10_000, 100_000];
  const runs = quick ? 3 : 5;
  const dir = scratchDir();
  const figures = { 0: await measure(dir, 0, runs) };
  for (const n of sizes) figures[n] = await measure(dir, n, runs);

  const rows = [];
  const at = (n) => figures[n];
  const fmt = (n) => n.toLocaleString('en-US');
  const MEASURES = [
    ['startMs', 'hub start (spawn → panel URL)', 'ms', 1000],
    ['rssMb', 'hub RSS after the list and the panel', 'MB', 150],
    ['pageMs', 'first page of tasks (POST /api/tasks/page) p50', 'ms', 50],
    ['cliMs', '`backchannel tasks` through the hub, spawn → exit p50', 'ms'],
    ['eventMs', 'event stream: connect → first event parsed p50', 'ms'],
    ['eventKb', 'event stream: first event size', 'KB'],
    ['paintMs', 'panel first paint (navigation → first row painted) p50', 'ms'],
    ['compactMs', 'journal load + compaction', 'ms'],
  ];
  for (const [key, name, unit, limitAt10k] of MEASURES) {
    // At most linear: the step from 10,000 to 100,000 tasks may cost at most 10 × the step from
    // 1,000 to 10,000 (both steps well above a shared machine's noise, unlike 0 → 1,000), with a
    // fifth more for that noise.
    const [small, middle, large] = sizes;
    if (large !== undefined && Number.isFinite(at(large)[key]) && Number.isFinite(at(small)[key])) {
      const step = at(middle)[key] - at(small)[key];
      const next = at(large)[key] - at(middle)[key];
      const allowed = Math.max(step, 0) * ((large - middle) / (middle - small));
      rows.push(
        row({
          fig: 'GR',
          name: `Growth of ${name}: ${fmt(middle)} → ${fmt(large)} vs ${fmt(small)} → ${fmt(middle)} scaled`,
          unit,
          value: next,
          baseline: allowed,
          ratio: allowed > 0 ? next / allowed : undefined,
          target: { op: '<=', ratio: 1.2 },
          detail: `linear: the second step may cost ${((large - middle) / (middle - small)).toFixed(0)}× the first (${step.toFixed(1)} ${unit}); ${fmt(small)}: ${at(small)[key].toFixed(1)}, ${fmt(middle)}: ${at(middle)[key].toFixed(1)}, ${fmt(large)}: ${at(large)[key].toFixed(1)} ${unit}`,
        }),
      );
    }
    if (limitAt10k !== undefined) {
      rows.push(
        row({
          fig: 'GR',
          name: `History 10,000: ${name}`,
          unit,
          value: at(10_000)[key],
          baseline: limitAt10k,
          target: { op: '<=', ratio: 1 },
          detail: `baseline column = the target (${limitAt10k} ${unit} at 10,000); empty history ${at(0)[key]?.toFixed(1)} ${unit}, 1,000: ${at(1000)[key].toFixed(1)} ${unit}`,
        }),
      );
    }
  }
  const table = [
    `| Finished tasks in history | ${['0', ...sizes.map(fmt)].join(' | ')} |`,
    `|---|${['0', ...sizes].map(() => '---').join('|')}|`,
    ...MEASURES.map(([key, name, unit]) => `| ${name} | ${[0, ...sizes].map((n) => cell(at(n), key, unit)).join(' | ')} |`),
    `| journal size | ${[0, ...sizes].map((n) => `${(at(n).journalBytes / 2 ** 20).toFixed(1)} MB`).join(' | ')} |`,
  ].join('\n');
  return { figure: 'growth', figures, table, rows };
});

function cell(figures, key, unit) {
  const value = figures[key];
  if (Number.isFinite(value)) return `${value.toFixed(unit === 'MB' ? 0 : 1)} ${unit}`;
  return key === 'paintMs' && figures.paintError ? 'no first paint within 30 s' : '—';
}

/** Every figure of one hub over `n` finished tasks. */
async function measure(dir, n, runs) {
  const dataDir = path.join(dir, `history-${n}`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (n > 0) writeHistory(dataDir, { count: n });
  log(`growth: ${n} tasks in history`);
  const compaction = await compactionMs(dataDir);
  const env = { ...process.env, CURSOR_IPC_DIR: path.join(dir, `ipc-${n}`), XDG_STATE_HOME: path.join(dir, `state-${n}`) };
  const starts = [];
  let figures;
  for (let i = 0; i < runs; i++) {
    const hub = await startServe(dataDir, env, ['--history-limit', String(Math.max(n, 1))]);
    try {
      starts.push(hub.startMs);
      if (i < runs - 1) continue;
      const rssStartMb = hub.rssMb();
      const pages = [];
      for (let j = 0; j < runs; j++) {
        const t0 = performance.now();
        const page = JSON.parse(await hub.api('POST', '/api/tasks/page', {}));
        pages.push(performance.now() - t0);
        if (n > 0 && page.tasks.length === 0) throw new Error(`the first page over ${n} tasks is empty`);
      }
      const cli = [];
      for (let j = 0; j < runs; j++) cli.push((await runCli(['tasks'], { ...env, BACKCHANNEL_CONTROL: hub.control })).ms);
      const events = [];
      for (let j = 0; j < runs; j++) events.push(await firstEvent(hub.url));
      // A panel that cannot paint at all over this history is a finding, not a crash of the bench.
      const paint = n > 0 ? await panelPaint(hub.url, runs, 1).catch((error) => ({ first: Number.NaN, error })) : { first: Number.NaN };
      if (paint.error) log(`growth: the panel did not paint over ${n} tasks: ${paint.error.message.split('\n')[0]}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      figures = {
        rssStartMb,
        rssMb: hub.rssMb(),
        peakMb: hub.peakMb(),
        pageMs: median(pages),
        cliMs: median(cli),
        eventMs: median(events.map((e) => e.ms)),
        eventKb: median(events.map((e) => e.bytes / 1024)),
        paintMs: paint.first,
        paintError: paint.error?.message.split('\n')[0],
      };
    } finally {
      await hub.stop();
    }
  }
  // The first start of a grown history may compact it: the median start is the steady one.
  return { ...figures, startMs: median(starts), firstStartMs: starts[0], compactMs: compaction.ms, journalBytes: compaction.bytes };
}

/** Opens the panel's event stream (`GET /api/events`) and reads its first event: its size and connect → parsed. */
function firstEvent(url) {
  const parsed = new URL(url);
  const token = parsed.searchParams.get('token');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get(`${parsed.origin}/api/events?token=${encodeURIComponent(token)}`, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET /api/events → ${res.statusCode}`));
      const chunks = [];
      res.on('data', (chunk) => {
        chunks.push(chunk);
        const text = Buffer.concat(chunks).toString('utf8');
        const start = text.indexOf('data: ');
        const end = start < 0 ? -1 : text.indexOf('\n\n', start);
        if (end < 0) return;
        const event = JSON.parse(text.slice(start + 6, end));
        const ms = performance.now() - t0;
        if (!Array.isArray(event.tasks)) return reject(new Error('the first event has no tasks'));
        req.destroy();
        resolve({ ms, bytes: Buffer.byteLength(text.slice(start + 6, end)) });
      });
    });
    req.on('error', (error) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
  });
}

/** Loads the journal and rewrites it as one record per task (what a start does when it compacts). */
async function compactionMs(dataDir) {
  const journal = new Journal(dataDir, silentLogger);
  const t0 = performance.now();
  const { entries } = journal.load();
  await journal.open();
  await journal.compact(entries);
  const ms = performance.now() - t0;
  await journal.close();
  return { ms, bytes: statSync(journal.file, { throwIfNoEntry: false })?.size ?? 0 };
}
