/**
 * Figure 6 — panel under load: `backchannel serve` (in this process) with the panel open in headless
 * Chromium, 200 tasks each reporting progress 5×/s. Measured in the page over a window while all are
 * running: frames per second (requestAnimationFrame), long tasks (PerformanceObserver 'longtask'),
 * and update latency from the broker's `update` event (clock here) to the row's text changing in the
 * DOM (MutationObserver, clock in the page; both are wall clocks of this machine, offset checked).
 */
import path from 'node:path';
import { existsSync } from 'node:fs';
import { agentPath, log, scratchDir, REPO_DIR } from './lib/env.js';
import { launchChromium } from './lib/browser.js';
import { main, row } from './lib/harness.js';
import { summarize, wallNow } from './lib/stats.js';

main(async ({ quick }) => {
  const windowMs = quick ? 5000 : 10_000;
  const startPath = path.join(REPO_DIR, 'dist/hub/headless/start.js');
  if (!existsSync(startPath) || !existsSync(path.join(REPO_DIR, 'dist/renderer/index.html'))) {
    return {
      figure: 6,
      rows: [
        {
          fig: '6',
          name: 'Panel under load',
          status: 'not measured',
          detail: 'panel not built yet (dist/hub/headless/start.js or dist/renderer missing)',
        },
      ],
    };
  }
  const { startHeadless } = await import(startPath);
  const result = await measurePanel(windowMs, (options) => startHeadless(options));
  // For comparison: the same stack with the bridge spacing events by 100 ms always (round 1's
  // bridge; the renderer is frame-aligned in both).
  const variant = await measurePanel(windowMs, (options) => startBridgeAt(100, options));
  result.bridge100 = variant;
  result.rows.push(
    row({
      fig: '6',
      name: 'Panel p95 with the bridge flushing every 100 ms (round 1, not the default)',
      unit: 'ms',
      value: variant.latency.p95,
      baseline: result.latency.p95,
      detail: `p50 ${variant.latency.p50.toFixed(0)} vs ${result.latency.p50.toFixed(0)} ms; baseline column = the default frame-aligned bridge, same run; ${variant.longTasks.length} long tasks`,
    }),
  );
  return result;
});

/** The pieces startHeadless() puts together, with the bridge's flush interval as a parameter. */
async function startBridgeAt(flushIntervalMs, options) {
  const { TaskBroker, silentLogger } = await import('../dist/broker/index.js');
  const { createBrokerBridge } = await import('../dist/hub/broker-bridge.js');
  const { startPanelServer } = await import('../dist/hub/headless/server.js');
  const broker = new TaskBroker({
    dataDir: options.dataDir,
    ipcDir: options.ipcDir,
    concurrency: options.concurrency,
    logger: silentLogger,
  });
  await broker.ready;
  const bridge = createBrokerBridge(broker, {
    mode: 'headless',
    version: 'bench',
    logPath: path.join(options.dataDir, 'log'),
    presets: [],
    flushIntervalMs,
  });
  const server = await startPanelServer({ bridge, port: 0 });
  return {
    url: server.url,
    broker,
    async close() {
      await server.close();
      bridge.close();
      await broker.close();
    },
  };
}

async function measurePanel(windowMs, start) {
  const tasks = 200;
  const dir = scratchDir();
  const headless = await start({
    port: 0,
    dataDir: path.join(dir, 'data'),
    ipcDir: path.join(dir, 'ipc'),
    concurrency: tasks,
    consoleLevel: false,
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(headless.url);
    await page.waitForSelector('#task-list', { state: 'attached' });

    const eventAt = new Map();
    const running = new Set();
    headless.broker.on('update', (u) => {
      if (u.kind === 'partial') eventAt.set(`${u.taskId}|${u.payload.data.step}`, wallNow());
      else if (u.kind === 'started') running.add(u.taskId);
    });
    log(`panel: starting ${tasks} ticker agents`);
    const handles = Array.from({ length: tasks }, (_, i) =>
      headless.broker.submit({ command: agentPath('panel-ticker.mjs'), input: { ticks: 100_000, intervalMs: 200 }, label: `ticker ${i}` }),
    );
    // All running and reporting before the window opens.
    const deadline = Date.now() + 120_000;
    while ((running.size < tasks || eventAt.size < tasks * 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    await page.waitForFunction((n) => document.querySelectorAll('li.task').length >= n, tasks, { timeout: 60_000 });
    const offset = await clockOffset(page);
    log(`panel: ${running.size} running; measuring ${windowMs / 1000} s (page clock offset ${offset.toFixed(2)} ms)`);
    const measured = await page.evaluate(measureInPage, windowMs);
    for (const handle of handles) handle.cancel('benchmark over');

    const latencies = [];
    let unmatched = 0;
    for (const [id, text, at] of measured.changes) {
      const sent = eventAt.get(`${id}|${text}`);
      if (sent === undefined) unmatched += 1;
      else latencies.push(at - offset - sent);
    }
    const lat = { ...summarize(latencies), p95: percentile95(latencies) };
    const seconds = measured.seconds;
    const fps = measured.frames / seconds;
    // Chromium reports tasks of 50 ms and more, its durations rounded to whole ms; the target counts only those over 50 ms.
    const overLimit = measured.longTasks.filter((ms) => ms > 50);
    const atLimit = measured.longTasks.length - overLimit.length;
    const longPerSecond = overLimit.length / seconds;
    const longMean = overLimit.length ? overLimit.reduce((a, b) => a + b, 0) / overLimit.length : 0;
    const result = {
      figure: 6,
      tasks,
      running: running.size,
      seconds,
      fps,
      renders: measured.renders.length,
      renderMs: measured.renders.length ? summarize(measured.renders) : undefined,
      longTasks: measured.longTasks,
      latency: lat,
      unmatched,
      clockOffsetMs: offset,
    };
    result.rows = [
      row({
        fig: '6',
        name: `Panel, ${tasks} tasks × 5 updates/s: update → DOM p50`,
        unit: 'ms',
        value: lat.p50,
        baseline: 37,
        ratio: lat.p50 / 37,
        target: { op: '<=', ratio: 1 },
        detail: `baseline column = the design's 37 ms UI latency; one frame-aligned path (bridge: next tick when idle, ≤ 1 event per 16 ms, 100 ms only under pressure; renderer: next animation frame)`,
      }),
      row({
        fig: '6',
        name: `Panel, ${tasks} tasks × 5 updates/s: update → DOM p95`,
        unit: 'ms',
        value: lat.p95,
        baseline: 50,
        ratio: lat.p95 / 50,
        target: { op: '<=', ratio: 1 },
        detail: `p50 ${lat.p50.toFixed(0)} ms, p99 ${lat.p99.toFixed(0)} ms over ${lat.n} row updates; baseline column = the 50 ms target`,
      }),
      row({
        fig: '6',
        name: 'Panel: frames rendered per second',
        unit: 'fps',
        value: fps,
        detail: `${measured.renders.length} panel renders in ${seconds.toFixed(1)} s, each ${result.renderMs ? `${result.renderMs.p50.toFixed(1)} ms p50, ${result.renderMs.max.toFixed(0)} ms max` : 'n/a'} of script`,
      }),
      row({
        fig: '6',
        name: 'Panel: long tasks (> 50 ms) in the window',
        unit: 'tasks',
        value: overLimit.length,
        ratio: overLimit.length,
        target: { op: '<=', ratio: 0 },
        detail: `${longPerSecond.toFixed(2)}/s, mean ${longMean.toFixed(0)} ms, max ${Math.max(0, ...measured.longTasks).toFixed(0)} ms of all reported; ${atLimit} reported at exactly 50 ms (not counted); target: none over 50 ms (issue 13); ratio column = the count`,
      }),
    ];
    return result;
  } finally {
    await browser.close();
    await headless.close();
  }
}

function percentile95(values) {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.95) - 1)];
}

/** Page wall clock minus ours, from the midpoint of a round trip (best of several). */
async function clockOffset(page) {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < 10; i++) {
    const t0 = wallNow();
    const pageNow = await page.evaluate(() => performance.timeOrigin + performance.now());
    const t1 = wallNow();
    if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: pageNow - (t0 + t1) / 2 };
  }
  return best.offset;
}

/** Runs in the page: frames, long tasks, panel renders, and every row whose sub-line text changed. */
function measureInPage(windowMs) {
  return new Promise((resolve) => {
    const list = document.getElementById('task-list');
    const changes = [];
    const lastText = new Map();
    const observer = new MutationObserver((records) => {
      const at = performance.timeOrigin + performance.now();
      const rows = new Set();
      for (const record of records) {
        const el = record.target.nodeType === 1 ? record.target : record.target.parentElement;
        const li = el?.closest('li.task');
        if (li) rows.add(li);
      }
      for (const li of rows) {
        const text = li.querySelector('.task-sub')?.textContent ?? '';
        const id = li.dataset.id;
        if (lastText.get(id) !== text) {
          lastText.set(id, text);
          changes.push([id, text, at]);
        }
      }
    });
    observer.observe(list, { subtree: true, childList: true, characterData: true });
    const longTasks = [];
    const longObserver = new PerformanceObserver((entries) => {
      for (const entry of entries.getEntries()) longTasks.push(entry.duration);
    });
    longObserver.observe({ type: 'longtask' });
    const renders = [];
    const renderObserver = new PerformanceObserver((entries) => {
      for (const entry of entries.getEntries()) if (entry.name === 'backchannel:render') renders.push(entry.duration);
    });
    renderObserver.observe({ type: 'measure' });
    const start = performance.now();
    let frames = 0;
    const frame = (now) => {
      frames += 1;
      if (now - start < windowMs) return requestAnimationFrame(frame);
      observer.disconnect();
      longObserver.disconnect();
      renderObserver.disconnect();
      resolve({ frames, renders, longTasks, changes, seconds: (now - start) / 1000 });
    };
    requestAnimationFrame(frame);
  });
}
