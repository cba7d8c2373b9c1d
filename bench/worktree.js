/**
 * Coding tasks (docs/coding-agents.md): making a task's worktree in a 10,000-file repository — what
 * the broker does before the agent starts (check the request, make the entry directory, `git worktree
 * add` on a new branch, write the record) — against `git worktree add` alone in the same run,
 * interleaved; and rendering a 5,000-line diff in the panel's change view (headless Chromium), from
 * the call to the second animation frame after it (first paint).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** CPU time (ms) of this process's children that have been waited for (git), from /proc/self/stat. */
function childCpuMs() {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/**
 * One sample of each way, in an order that alternates (ABC, CBA, …) so that no way always follows
 * another's removal of 10,000 files: bare `git worktree add`, the same with parallel checkout, and
 * the task's (plan: one rev-parse; create: the driver listing, entry, `worktree add`, record).
 */
async function sample(i, repo, dir, worktrees, into) {
  const ways = {
    plain: () => {
      const target = path.join(dir, `plain-${i}`);
      git(repo, 'worktree', 'add', '--quiet', '-b', `plain/${i}`, target, 'HEAD');
      return () => git(repo, 'worktree', 'remove', '--force', target);
    },
    parallel: () => {
      const target = path.join(dir, `parallel-${i}`);
      git(repo, '-c', 'checkout.workers=0', 'worktree', 'add', '--quiet', '-b', `parallel/${i}`, target, 'HEAD');
      return () => git(repo, 'worktree', 'remove', '--force', target);
    },
    ours: async () => {
      const taskId = `01a20000-0000-7000-8000-${String(i).padStart(12, '0')}`;
      const t0 = performance.now();
      const plan = worktrees.plan(repo, {});
      into.plan.push(performance.now() - t0);
      const record = await worktrees.create(taskId, plan, 'bench');
      if (!record.worktree) throw new Error('no worktree');
      return () => worktrees.discard(taskId);
    },
  };
  const order = i % 2 === 0 ? ['plain', 'parallel', 'ours'] : ['ours', 'parallel', 'plain'];
  for (const way of order) {
    const cpu0 = childCpuMs();
    const t0 = performance.now();
    const undo = await ways[way]();
    into[way].push(performance.now() - t0);
    into[`${way}Cpu`].push(childCpuMs() - cpu0);
    await undo();
  }
}

async function worktreeRows(quick) {
  const dir = scratchDir();
  try {
    const repo = makeRepo(dir);
    const worktrees = new Worktrees(path.join(dir, 'worktrees'));
    const runs = quick ? 3 : 7;
    const s = { plain: [], parallel: [], ours: [], plan: [], plainCpu: [], parallelCpu: [], oursCpu: [] };
    for (let i = 0; i < runs; i++) {
      await sample(i, repo, dir, worktrees, s);
      log(
        `worktree ${i + 1}/${runs}: git ${s.plain.at(-1).toFixed(0)} ms, parallel ${s.parallel.at(-1).toFixed(0)} ms, task ${s.ours.at(-1).toFixed(0)} ms`,
      );
    }
    const ms = (values) => `${median(values).toFixed(1)} ms`;
    const steps = `plan (one rev-parse) ${ms(s.plan)}; git's CPU p50: bare ${ms(s.plainCpu)}, parallel ${ms(s.parallelCpu)}, task ${ms(s.oursCpu)}`;
    return [
      row({
        fig: 'W',
        name: `A task's worktree in a ${FILES.toLocaleString('en')}-file repository p50`,
        unit: 'ms',
        value: median(s.ours),
        baseline: median(s.plain),
        target: { op: '<=', ratio: 1.2 },
        detail: `baseline: \`git worktree add -b\` alone, interleaved in alternating order (${runs} runs each); the task's adds the request check, the driver listing, the private entry directory and its record, and checks out with \`checkout.workers=0\`; ${steps}`,
      }),
      row({
        fig: 'W',
        name: `(limit) the task's worktree vs \`git -c checkout.workers=0 worktree add\` alone p50`,
        unit: 'ms',
        value: median(s.ours),
        baseline: median(s.parallel),
        target: undefined,
        detail: `the task's own steps on top of the same checkout: ${steps}`,
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
