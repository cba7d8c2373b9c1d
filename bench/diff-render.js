/**
 * Diff render (issue 26, "rendering a 5,000-line diff in the panel ≤ 200 ms to first paint"): a real
 * hub (`backchannel serve`), a real git repository of 50 files, and a fake coding agent
 * (test/fixtures/coder.mjs) that rewrites every line of them in its worktree: a recorded diff of
 * 5,000 changed lines. Timed in headless Chromium, in the page (performance.now(), from navigation
 * start): the panel opened on that task (`#task=<id>`) until the frame after the diff's first line is
 * in the DOM; and, in a loaded panel, a click on the task's row until the same. Baseline, same run:
 * a task whose diff is one line. The browser's own floor, same run: a bare static page (one line of a
 * "diff" in its HTML, no script) from navigation start to the frame after that line is in the DOM.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { log, REPO_DIR, scratchDir } from './lib/env.js';
import { main, row } from './lib/harness.js';
import { launchChromium } from './lib/browser.js';
import { startServe } from './lib/hub.js';
import { median } from './lib/stats.js';

const CODER = path.join(REPO_DIR, 'test', 'fixtures', 'coder.mjs');
const FILES = 50;
const LINES_PER_FILE = 50;
const IDENTITY = {
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@bench',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@bench',
};

main(async ({ quick }) => {
  const runs = quick ? 3 : 7;
  const dir = scratchDir();
  const repo = makeRepo(path.join(dir, 'repo'));
  // The panel's New task runs only what the run policy allows: this bench's coding agent (docs/run-policy.md).
  const config = path.join(dir, 'config.yaml');
  writeFileSync(config, `run_policy:\n  allow:\n    - { command: node, args: [${JSON.stringify(CODER)}] }\n`, {
    mode: 0o600,
  });
  const hub = await startServe(path.join(dir, 'data'), {
    ...process.env,
    BACKCHANNEL_CONFIG: config,
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
  });
  try {
    const fileText = (f, word) =>
      Array.from({ length: LINES_PER_FILE }, (_, i) => `export const value${f}_${i} = compute(${i}, '${word}');\n`).join('');
    const big = await codingTask(
      hub,
      repo,
      'Rewrite every line',
      Array.from({ length: FILES }, (_, f) => ({ path: `src/f${f}.ts`, content: fileText(f, 'rewritten') })),
    );
    const small = await codingTask(hub, repo, 'One line', [
      { path: 'src/f0.ts', content: fileText(0, 'old').replace("compute(0, 'old')", "compute(0, 'one')") },
    ]);
    // Every file must be in the change: a capture that missed some would pass for a fast render.
    if (big.files !== FILES) throw new Error(`the recorded change has ${big.files} files, not ${FILES}`);
    const diffLines = big.lines;
    log(`diff render: ${diffLines} diff lines (${big.changed} changed) against ${small.lines}`);
    const bigTimes = await panelTimes(hub.url, big.id, 'Rewrite every line', runs);
    const smallTimes = await panelTimes(hub.url, small.id, 'One line', runs);
    const floor = await bareTimes(runs);
    const same = `baseline column = a one-line diff, same hub, same run; p50 of ${runs} page loads in headless Chromium, timed in the page`;
    return {
      figure: 'diff-render',
      runs,
      big: bigTimes,
      small: smallTimes,
      floor,
      rows: [
        row({
          fig: 'DR',
          name: `Panel opened on a coding task with a ${big.changed.toLocaleString('en')}-line diff: navigation → diff painted`,
          unit: 'ms',
          value: bigTimes.navigation,
          baseline: smallTimes.navigation,
          target: { op: '<=', ratio: 200 / smallTimes.navigation },
          detail: `target ≤ 200 ms; ${diffLines} lines of \`git diff\` in ${FILES} files; from navigation start to the frame after the diff's first line is in the DOM (in the DOM at ${bigTimes.inDom.toFixed(0)} ms; the change asked for at ${bigTimes.asked.toFixed(0)} ms, ${bigTimes.askedAfterTask.toFixed(0)} ms after the task itself (p50 of the difference), the change fetched at ${bigTimes.fetched.toFixed(0)} ms, panel.js at ${bigTimes.script.toFixed(0)} ms); parsing the diff and building its view ${bigTimes.build.toFixed(1)} ms (one-line diff: ${smallTimes.build.toFixed(1)} ms); lines in the first painted frame: ${bigTimes.builtLines} (the first file; the other files open while they fit 400 lines are built after that frame, the rest collapsed and built when opened); ${same}`,
        }),
        row({
          fig: 'DR',
          name: 'The same diff, opened from the task list in a loaded panel: click → diff painted',
          unit: 'ms',
          value: bigTimes.open,
          baseline: smallTimes.open,
          target: { op: '<=', ratio: 200 / smallTimes.open },
          detail: `target ≤ 200 ms; the change (${(big.diffBytes / 1024).toFixed(0)} KiB of JSON from GET /api/tasks/:id/change) was fetched by this page before and is kept: parsing the diff and building its view are timed, the fetch is in the row above; ${same}`,
        }),
        row({
          fig: 'DR',
          name: "The browser's floor: a bare static page (no script), navigation → its line painted",
          unit: 'ms',
          value: floor,
          detail: `the same Chromium and clock as the rows above, served by a bare node:http server; what no panel can go below on this machine at this load; p50 of ${runs}`,
        }),
        row({
          fig: 'DR',
          name: 'The same diff: Expand all (every file, first 400 lines of each built) → painted',
          unit: 'ms',
          value: bigTimes.expandAll,
          detail: `context for the lazy build: ${bigTimes.expandedLines} lines in the DOM after it; p50 of ${runs}`,
        }),
      ],
    };
  } finally {
    await hub.stop();
  }
});

function git(cwd, ...args) {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...IDENTITY }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function makeRepo(repo) {
  mkdirSync(path.join(repo, 'src'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  for (let f = 0; f < FILES; f++) {
    const text = Array.from({ length: LINES_PER_FILE }, (_, i) => `export const value${f}_${i} = compute(${i}, 'old');\n`).join('');
    writeFileSync(path.join(repo, 'src', `f${f}.ts`), text);
  }
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}

/** Runs the fake coding agent with `edits` in a worktree of `repo`; resolves with its recorded diff's size. */
async function codingTask(hub, repo, label, edits) {
  const { id } = JSON.parse(await hub.api('POST', '/api/tasks', { command: CODER, cwd: repo, worktree: true, input: { edits }, label }));
  for (let i = 0; i < 600; i++) {
    const { task } = JSON.parse(await hub.api('GET', `/api/tasks/${id}`));
    if (task.state !== 'running' && task.state !== 'queued' && task.change) {
      if (task.state !== 'succeeded') throw new Error(`the coding task ${label} ended ${task.state}`);
      const text = await hub.api('GET', `/api/tasks/${id}/change`);
      const { diff } = JSON.parse(text);
      const lines = diff.split('\n').length - 1;
      const changed = task.change.insertions + task.change.deletions;
      return { id, lines, changed, files: task.change.files.length, diffBytes: Buffer.byteLength(text) };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the coding task ${label} did not finish in 60 s`);
}

/**
 * In the page: `window.__diffMarks.line` when the first diff line is in the DOM (a MutationObserver),
 * `painted` in the frame after it, `fetched` when the change's response ended (Resource Timing).
 */
function watchDiff() {
  const marks = (window.__diffMarks = {});
  new MutationObserver((_, observer) => {
    if (marks.line === undefined && document.querySelector('.change .dl')) {
      marks.line = performance.now();
      requestAnimationFrame(() => {
        marks.painted = performance.now();
        // What the first painted frame held (files open below the first are built after it).
        marks.built = document.querySelectorAll('.change .dl').length;
      });
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
}

async function panelTimes(url, id, label, runs) {
  const browser = await launchChromium();
  const navigation = [];
  const inDom = [];
  const fetched = [];
  const script = [];
  const asked = [];
  const taskAsked = [];
  const askedAfterTask = [];
  const open = [];
  const expandAll = [];
  const build = [];
  let builtLines = 0;
  let expandedLines = 0;
  try {
    for (let i = 0; i < runs + 1; i++) {
      // Opened on the task: navigation → painted.
      const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
      await page.addInitScript(watchDiff);
      await page.goto(`${url}#task=${encodeURIComponent(id)}`, { waitUntil: 'commit' });
      await page.waitForFunction(() => window.__diffMarks.painted !== undefined, null, { timeout: 30_000 });
      const marks = await page.evaluate(() => ({
        ...window.__diffMarks,
        fetched: performance.getEntriesByType('resource').find((entry) => entry.name.includes('/change'))?.responseEnd ?? NaN,
        script: performance.getEntriesByType('resource').find((entry) => entry.name.includes('/panel.js'))?.responseEnd ?? NaN,
        // When the change was asked for, and the task itself (the panel knows nothing of it at start).
        asked: performance.getEntriesByType('resource').find((entry) => entry.name.includes('/change'))?.startTime ?? NaN,
        taskAsked:
          performance.getEntriesByType('resource').find((entry) => /\/api\/tasks\/[0-9a-f-]{36}(\?|$)/.test(entry.name))?.startTime ?? NaN,
        build: performance.getEntriesByName('backchannel:diff').at(-1)?.duration ?? NaN,
      }));
      // Expand all: every file's first chunk built, then painted.
      const expanded = await page.evaluate(
        () =>
          new Promise((resolve) => {
            const button = [...document.querySelectorAll('.change .diff-toolbar button')].find((b) => b.textContent === 'Expand all');
            const t0 = performance.now();
            button.click();
            requestAnimationFrame(() =>
              setTimeout(() => resolve({ ms: performance.now() - t0, lines: document.querySelectorAll('.change .dl').length }), 0),
            );
          }),
      );
      // In a loaded panel: close, then click the row → painted.
      await page.keyboard.press('Escape');
      await page.waitForSelector('#details-pane', { state: 'hidden' });
      const clicked = await page.evaluate(
        (text) =>
          new Promise((resolve, reject) => {
            const row = [...document.querySelectorAll('li.task')].find((el) => el.querySelector('.task-label')?.textContent === text);
            if (!row) return reject(new Error(`no row ${text}`));
            const t0 = performance.now();
            const observer = new MutationObserver(() => {
              if (!document.querySelector('.change .dl')) return;
              observer.disconnect();
              requestAnimationFrame(() => resolve(performance.now() - t0));
            });
            observer.observe(document, { childList: true, subtree: true });
            row.click();
          }),
        label,
      );
      await page.close();
      // The first round also warms the browser and the hub: not counted.
      if (i === 0) continue;
      navigation.push(marks.painted);
      inDom.push(marks.line);
      fetched.push(marks.fetched);
      script.push(marks.script);
      asked.push(marks.asked);
      taskAsked.push(marks.taskAsked);
      askedAfterTask.push(marks.asked - marks.taskAsked);
      open.push(clicked);
      expandAll.push(expanded.ms);
      build.push(marks.build);
      builtLines = marks.built;
      expandedLines = expanded.lines;
    }
  } finally {
    await browser.close();
  }
  return {
    navigation: median(navigation),
    inDom: median(inDom),
    fetched: median(fetched),
    script: median(script),
    asked: median(asked),
    taskAsked: median(taskAsked),
    askedAfterTask: median(askedAfterTask),
    open: median(open),
    expandAll: median(expandAll),
    build: median(build),
    builtLines,
    expandedLines,
  };
}

/** The browser's floor: a bare static page whose HTML holds one "diff" line, timed as the panel is (watchDiff). */
async function bareTimes(runs) {
  const page =
    '<!doctype html><html><head><meta charset="utf-8"><title>floor</title></head><body><div class="change"><div class="dl">line</div></div></body></html>';
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(page);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const browser = await launchChromium();
  const times = [];
  try {
    for (let i = 0; i < runs + 1; i++) {
      const tab = await browser.newPage({ viewport: { width: 1100, height: 720 } });
      await tab.addInitScript(watchDiff);
      await tab.goto(`http://127.0.0.1:${server.address().port}/`, { waitUntil: 'commit' });
      await tab.waitForFunction(() => window.__diffMarks.painted !== undefined, null, { timeout: 30_000 });
      const painted = await tab.evaluate(() => window.__diffMarks.painted);
      await tab.close();
      if (i > 0) times.push(painted);
    }
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  }
  return median(times);
}
