/**
 * Coding tasks in the panel (docs/coding-agents.md): three agents on one repository, each in its own
 * worktree; the details pane shows a change file by file (collapsible; a 5,000-line file built in
 * chunks), reviews two together with their overlap flagged, applies one, refuses a conflicting one
 * naming the file (the checkout unchanged), keeps a branch and discards the rest.
 */
import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const IDENTITY = { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: { ...process.env, ...IDENTITY }, encoding: 'utf8' });
const numbered = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join('');
const hashOf = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

test('three coding agents on one repository: review each and two together, apply one, a conflict refused, discard (screenshot)', async ({
  page,
}) => {
  test.setTimeout(180_000);
  dir = scratchDir();
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  const A = numbered(30, 'const a');
  fs.writeFileSync(path.join(repo, 'app.ts'), A);
  fs.writeFileSync(path.join(repo, 'README.md'), '# demo\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  serve = await startServe(path.join(dir, 'data'));
  const coder = path.join(ROOT, 'test', 'fixtures', 'coder.mjs');
  const start = (label: string, edits: unknown[]) =>
    serve!
      .api<{ id: string }>('POST', '/api/tasks', { command: coder, cwd: repo, worktree: true, label, input: { edits } })
      .then((r) => r.id);
  const rename = await start('Rename the constants', [
    { path: 'app.ts', content: A.replace('const a 3\n', 'const renamed 3\n') },
    { path: 'docs/notes.md', content: 'Renamed.\n' },
  ]);
  const big = await start('Generate the table', [{ path: 'table.ts', content: numbered(5000, 'row') }]);
  const clash = await start('Touch the same line', [{ path: 'app.ts', content: A.replace('const a 3\n', 'const other 3\n') }]);
  for (const id of [rename, big, clash]) {
    await expect
      .poll(
        () =>
          serve!
            .api<{ task: { state: string; change?: unknown } }>('GET', `/api/tasks/${id}`)
            .then((d) => `${d.task.state}:${d.task.change ? 1 : 0}`),
        {
          timeout: 60_000,
        },
      )
      .toBe('succeeded:1');
  }
  const before = hashOf(path.join(repo, 'app.ts'));
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));

  // One change, file by file.
  await page.goto(`${serve.url}#task=${rename}`);
  const change = page.locator('.details .section.change');
  await expect(change.locator('.change-facts')).toContainText('2 files, +2 −1');
  await expect(change.locator('.diff-file')).toHaveCount(2);
  const appFile = change.locator('.diff-file[data-path="app.ts"]');
  await expect(appFile.locator('.diff-line.add')).toHaveText('+const renamed 3');
  await appFile.locator('summary').click();
  await expect(appFile.locator('.diff-body')).toBeHidden();

  // Two together: the same line, flagged.
  await page.goto(`${serve.url}#task=${clash}`);
  await change.locator('details.review summary').click();
  await change.locator(`input[data-task="${rename}"]`).check();
  await change.getByRole('button', { name: 'Review together' }).click();
  await expect(change.locator('.overlap-summary')).toHaveText('1 overlap(s) in 1 file(s): app.ts');
  await expect(change.locator('.diff-flag').first()).toContainText('Overlaps #2 (base lines 3–3)');
  if (process.env.UPDATE_DOCS_SCREENSHOT === '1') await page.screenshot({ path: path.join(ROOT, 'docs', 'coding-agents.png') });
  await page.screenshot({ path: path.join(ROOT, 'test-results', 'coding-agents.png') });
  // Applying both in this order: the second conflicts, nothing changes.
  await change.getByRole('button', { name: 'Apply in this order' }).click();
  await expect(change.locator('.change-status')).toContainText(`the change of task ${rename} does not apply cleanly`);
  await expect(change.locator('.change-status')).toContainText('(app.ts); nothing was changed');
  expect(hashOf(path.join(repo, 'app.ts'))).toBe(before);

  // Apply one alone.
  await change.getByRole('button', { name: 'Apply', exact: true }).click();
  await expect(change.locator('.change-status')).toContainText('Applied 1 change(s) to the checkout: app.ts');
  expect(fs.readFileSync(path.join(repo, 'app.ts'), 'utf8')).toContain('const other 3\n');

  // The 5,000-line file: built in chunks, the rest on demand.
  await page.goto(`${serve.url}#task=${big}`);
  const table = change.locator('.diff-file[data-path="table.ts"]');
  await expect(table.locator('summary')).toContainText('+5000 −0');
  await expect(table.locator('.diff-line')).toHaveCount(400);
  await table.locator('.diff-more').click();
  await expect(table.locator('.diff-line')).toHaveCount(800);
  await change.getByRole('button', { name: 'Keep branch' }).click();
  await expect(change.locator('.change-status')).toContainText(/Worktree removed; branch backchannel\/[0-9a-f]{12} kept/);

  await page.goto(`${serve.url}#task=${rename}`);
  await change.getByRole('button', { name: 'Discard' }).click();
  await expect(change.locator('.change-status')).toHaveText('Discarded: worktree and branch removed');
  const branches = git(repo, 'branch', '--list', 'backchannel/*', '--format=%(refname:short)').split('\n').filter(Boolean);
  expect(branches).toHaveLength(2); // the kept one and the clash's (not discarded here)
  expect(errors).toEqual([]);
});
