/**
 * How cost grows with history (issue 27 item 3): a hub (`backchannel serve --history-limit N`, its
 * own process) over a data directory holding N finished tasks (written by bench/lib/history.js), for
 * N = 1,000, 10,000 and 100,000. Measured at each N: the hub's start (spawn → its panel URL printed,
 * the control endpoint answering), its RSS after start and after serving the list and the panel, the
 * first page of tasks (POST /api/tasks/page) and `backchannel tasks` (the CLI, spawn → exit, through
 * the hub), the panel's first paint in headless Chromium, and the journal's compaction (load + rewrite
 * of N records, in this process, as a start does when the journal has grown). Baseline: the same
 * figure over an empty history, same run; growth is judged per task against the 1,000-task figure.
 */
import { mkdirSync, statSync } from 'node:fs';
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
    ['paintMs', 'panel first paint (navigation → first row painted) p50', 'ms'],
    ['compactMs', 'journal load + compaction', 'ms'],
  ];
  for (const [key, name, unit, limitAt10k] of MEASURES) {
    // The panel paints no row over an empty history: its growth is judged from zero.
    const base = Number.isFinite(at(0)[key]) ? at(0)[key] : 0;
    // What history adds beyond the empty one's cost grows at most linearly: N tasks may add N/1000 × what
    // 1,000 added, plus a tenth of the empty figure for the noise of a shared machine.
    const perThousand = Math.max(at(1000)[key] - base, 0);
    for (const n of sizes.slice(1)) {
      const added = at(n)[key] - base;
      const allowed = perThousand * (n / 1000) + base / 10;
      rows.push(
        row({
          fig: 'GR',
          name: `History ${fmt(n)} vs 1,000: ${name}, added over an empty history`,
          unit,
          value: added,
          baseline: allowed,
          ratio: allowed > 0 ? added / allowed : undefined,
          target: { op: '<=', ratio: 1 },
          detail: `at most linear: ${fmt(n)} tasks may add ${fmt(n / 1000)}× what 1,000 added (${perThousand.toFixed(1)} ${unit}) + a tenth of the empty figure; empty history ${base.toFixed(1)} ${unit}, ${fmt(n)}: ${at(n)[key].toFixed(1)} ${unit}`,
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
          detail: `baseline column = the target (${limitAt10k} ${unit} at 10,000); empty history ${base.toFixed(1)} ${unit}, 1,000: ${at(1000)[key].toFixed(1)} ${unit}`,
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
