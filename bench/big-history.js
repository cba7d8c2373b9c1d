/**
 * Big history (issue 22 item 4, results out of memory): a hub (`backchannel serve`, its own process)
 * over 1,000 finished tasks of which 100 returned 10 MB, written straight into its data directory
 * (bench/lib/history.js: the journal with summaries, the results in results/<id>.json). Measured:
 * the hub's RSS after start, after serving lists and the panel, and after serving a whole 10 MB
 * result once a run (issue 48 §3: sent from its file, not parsed again), the first page of tasks
 * (bytes and time), the whole list, the panel's first paint (headless Chromium), one whole result.
 * Baseline, same run: a hub over 1,000 tasks whose results are all small.
 */
import path from 'node:path';
import { log, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { writeHistory } from './lib/history.js';
import { startServe } from './lib/hub.js';
import { panelPaint } from './lib/panel-paint.js';
import { median } from './lib/stats.js';
import { TASK_PAGE_SIZE } from '../dist/model/task.js';
const TASKS = 1000;
/** The rows the panel shows before it is scrolled: its first page (older pages load on scroll). */
const FIRST_PAGE_ROWS = Math.min(TASKS, TASK_PAGE_SIZE);
const BIG_EVERY = 10;
const BIG_CHARS = 10 * 1024 * 1024;
const MB = 1024 * 1024;

main(async ({ quick }) => {
  const runs = quick ? 3 : 7;
  const dir = scratchDir();
  log(`big history: writing ${TASKS} tasks, ${TASKS / BIG_EVERY} with 10 MB results`);
  const bigDir = path.join(dir, 'big');
  const ids = writeHistory(bigDir, { count: TASKS, big: (i) => (i % BIG_EVERY === 0 ? BIG_CHARS : 0) });
  const smallDir = path.join(dir, 'small');
  writeHistory(smallDir, { count: TASKS });

  const big = await measureHub(bigDir, path.join(dir, 'ipc-big'), runs, ids[ids.length - BIG_EVERY]);
  const small = await measureHub(smallDir, path.join(dir, 'ipc-small'), runs);
  const same = 'baseline column = the same hub over 1,000 small results, same run';
  return {
    figure: 'big-history',
    runs,
    big,
    small,
    rows: [
      row({
        fig: 'BH',
        name: 'Hub RSS, 1,000 tasks in history (100 × 10 MB results), after lists + panel + whole results',
        unit: 'MB',
        value: big.rssMb,
        baseline: small.rssMb,
        target: { op: '<=', ratio: 200 / small.rssMb },
        detail: `target ≤ 200 MB; right after start ${big.rssStartMb.toFixed(0)} MB (small: ${small.rssStartMb.toFixed(0)}); after lists + panel ${big.rssBeforeResultsMb.toFixed(0)} MB, right after ${runs} whole 10 MB results served ${big.rssAfterResultsMb.toFixed(0)} MB; peak ${big.peakMb.toFixed(0)} MB; ${same}`,
      }),
      row({
        fig: 'BH',
        name: 'First page of /api/tasks (200 tasks): bytes',
        unit: 'MB',
        value: big.pageBytes / MB,
        baseline: small.pageBytes / MB,
        target: { op: '<=', ratio: 1 / (small.pageBytes / MB) },
        detail: `target ≤ 1 MB; the whole list (GET /api/tasks, 1,000 tasks): ${(big.listBytes / MB).toFixed(2)} MB; ${same}`,
      }),
      row({
        fig: 'BH',
        name: 'First page of /api/tasks (200 tasks): time p50',
        unit: 'ms',
        value: big.pageMs,
        baseline: small.pageMs,
        target: { op: '<=', ratio: 100 / small.pageMs },
        detail: `target ≤ 100 ms; the whole list ${big.listMs.toFixed(0)} ms (small: ${small.listMs.toFixed(0)} ms); ${runs} runs; ${same}`,
      }),
      row({
        fig: 'BH',
        name: 'Panel first paint over that history (navigation → first task row painted)',
        unit: 'ms',
        value: big.paintMs,
        baseline: small.paintMs,
        target: { op: '<=', ratio: 500 / small.paintMs },
        detail: `target ≤ 500 ms; p50 of ${runs} page loads in headless Chromium, timed in the page from navigation start to the frame after the first row (in the DOM at ${big.rowInDomMs.toFixed(0)} ms); the page's script has run (DOMContentLoaded) at ${big.pageReadyMs.toFixed(0)} ms; the first page's ${FIRST_PAGE_ROWS} rows (of ${TASKS}) at ${big.allRowsMs.toFixed(0)} ms (small: ${small.allRowsMs.toFixed(0)} ms); Playwright's polling waitForSelector saw the row after ${big.polledMs.toFixed(0)} ms (small: ${small.polledMs.toFixed(0)} ms); ${same}`,
      }),
      row({
        fig: 'BH',
        name: 'One whole 10 MB result on demand (GET /api/tasks/:id/result)',
        unit: 'ms',
        value: big.resultMs,
        detail: `${(big.resultBytes / MB).toFixed(1)} MB of JSON, p50 of ${runs}; read from results/<id>.json, not kept in memory`,
      }),
    ],
  };
});

async function measureHub(dataDir, ipcDir, runs, bigId) {
  const hub = await startServe(dataDir, { ...process.env, CURSOR_IPC_DIR: ipcDir });
  try {
    const rssStartMb = hub.rssMb();
    const pages = [];
    const lists = [];
    let pageBytes = 0;
    let listBytes = 0;
    for (let i = 0; i < runs; i++) {
      const page = await timed(() => hub.api('POST', '/api/tasks/page', {}));
      pages.push(page.ms);
      pageBytes = page.bytes;
      const list = await timed(() => hub.api('GET', '/api/tasks'));
      lists.push(list.ms);
      listBytes = list.bytes;
    }
    const paint = await panelPaint(hub.url, runs, FIRST_PAGE_ROWS);
    let resultMs;
    let resultBytes;
    const rssBeforeResultsMb = hub.rssMb();
    if (bigId) {
      const fetches = [];
      for (let i = 0; i < runs; i++) {
        const fetched = await timed(() => hub.api('GET', `/api/tasks/${bigId}/result`));
        fetches.push(fetched.ms);
        resultBytes = fetched.bytes;
      }
      resultMs = median(fetches);
    }
    const rssAfterResultsMb = hub.rssMb();
    // RSS once the transient buffers of those replies are collected (the hub does not keep them).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return {
      rssStartMb,
      rssBeforeResultsMb,
      rssAfterResultsMb,
      rssMb: hub.rssMb(),
      peakMb: hub.peakMb(),
      pageMs: median(pages),
      pageBytes,
      listMs: median(lists),
      listBytes,
      paintMs: paint.first,
      rowInDomMs: paint.inDom,
      polledMs: paint.polled,
      allRowsMs: paint.all,
      pageReadyMs: paint.ready,
      resultMs,
      resultBytes,
    };
  } finally {
    await hub.stop();
  }
}

async function timed(call) {
  const t0 = performance.now();
  const text = await call();
  return { ms: performance.now() - t0, bytes: Buffer.byteLength(text) };
}
