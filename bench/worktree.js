/**
 * Coding tasks (docs/coding-agents.md): making a task's worktree in a 10,000-file repository — what
 * the broker does before the agent starts (check the request, make the entry directory, `git worktree
 * add` on a new branch, write the record) — against `git worktree add` alone in the same run,
 * interleaved; and rendering a 5,000-line diff in the panel's change view (headless Chromium), from
 * the call to the second animation frame after it (first paint).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { Worktrees } from '../dist/broker/worktree/worktrees.js';
import { log, REPO_DIR, scratchDir } from './lib/env.js';
import { launchChromium } from './lib/browser.js';
import { main, row } from './lib/harness.js';
import { median } from './lib/stats.js';

const FILES = 10_000;
const DIFF_LINES = 5000;
const IDENTITY = { GIT_AUTHOR_NAME: 'B', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'B', GIT_COMMITTER_EMAIL: 'b@b' };
const git = (cwd, ...args) => execFileSync('git', args, { cwd, env: { ...process.env, ...IDENTITY }, stdio: ['ignore', 'pipe', 'pipe'] });

function makeRepo(dir) {
  const repo = path.join(dir, 'repo');
  for (let d = 0; d < 100; d++) {
    mkdirSync(path.join(repo, `dir${d}`), { recursive: true });
    for (let f = 0; f < FILES / 100; f++) writeFileSync(path.join(repo, `dir${d}`, `file${f}.ts`), `export const v${d}_${f} = ${f};\n`);
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'ten thousand files');
  return repo;
}

async function worktreeRows(quick) {
  const dir = scratchDir();
  try {
    const repo = makeRepo(dir);
    const worktrees = new Worktrees(path.join(dir, 'worktrees'));
    const runs = quick ? 3 : 7;
    const plain = [];
    const ours = [];
    for (let i = 0; i < runs; i++) {
      const target = path.join(dir, `plain-${i}`);
      let t0 = performance.now();
      git(repo, 'worktree', 'add', '--quiet', '-b', `plain/${i}`, target, 'HEAD');
      plain.push(performance.now() - t0);
      git(repo, 'worktree', 'remove', '--force', target);

      const taskId = `01a20000-0000-7000-8000-${String(i).padStart(12, '0')}`;
      t0 = performance.now();
      const record = await worktrees.create(taskId, worktrees.plan(repo, {}), 'bench');
      ours.push(performance.now() - t0);
      if (!record.worktree) throw new Error('no worktree');
      await worktrees.discard(taskId);
      log(`worktree ${i + 1}/${runs}: git ${plain.at(-1).toFixed(0)} ms, task ${ours.at(-1).toFixed(0)} ms`);
    }
    return [
      row({
        fig: 'W',
        name: `A task's worktree in a ${FILES.toLocaleString('en')}-file repository p50`,
        unit: 'ms',
        value: median(ours),
        baseline: median(plain),
        target: { op: '<=', ratio: 1.2 },
        detail: `baseline: \`git worktree add -b\` alone, interleaved (${runs} runs each); the task's adds the request check (rev-parse ×2), the private entry directory and its record`,
      }),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function renderRow(quick) {
  const bundle = await build({
    stdin: {
      contents:
        "import { diffView, singleDiffFiles } from './src/renderer/diff-view.ts'; import { parseUnifiedDiff } from './src/model/change-overlap.ts'; window.renderDiff = (text) => diffView(singleDiffFiles(parseUnifiedDiff(text)));",
      resolveDir: REPO_DIR,
      loader: 'ts',
    },
    bundle: true,
    format: 'iife',
    write: false,
    platform: 'browser',
  });
  const diff = [
    'diff --git a/table.ts b/table.ts',
    'new file mode 100644',
    'index 0000000..1111111',
    '--- /dev/null',
    '+++ b/table.ts',
    `@@ -0,0 +1,${DIFF_LINES} @@`,
    ...Array.from({ length: DIFF_LINES }, (_, i) => `+export const row${i} = ${i};`),
    '',
  ].join('\n');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><link rel="stylesheet" href="x"><body></body>');
    await page.addStyleTag({ path: path.join(REPO_DIR, 'src/renderer/panel.css') });
    await page.addScriptTag({ content: bundle.outputFiles[0].text });
    const samples = [];
    for (let i = 0; i < (quick ? 3 : 9); i++) {
      samples.push(
        await page.evaluate(async (text) => {
          document.body.replaceChildren();
          const t0 = performance.now();
          document.body.append(window.renderDiff(text));
          await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
          return performance.now() - t0;
        }, diff),
      );
    }
    return row({
      fig: 'W',
      name: `Panel: a ${DIFF_LINES.toLocaleString('en')}-line diff, render → first paint p50`,
      unit: 'ms',
      value: median(samples),
      baseline: 200,
      target: { op: '<=', ratio: 1 },
      detail:
        'baseline column = the 200 ms target; parse the whole diff, build the open file\'s first 400 lines (the rest on "Show more"), two animation frames',
    });
  } finally {
    await browser.close();
  }
}

main(async ({ quick }) => ({ figure: 'W', rows: [...(await worktreeRows(quick)), await renderRow(quick)] }));
