/**
 * One panel with a task in every state — queued, running (with and without a percentage), waiting
 * for an answer, retrying, succeeded, failed, cancelled, and interrupted (from the history of a
 * server that was killed) — saved as a screenshot in test-results/ (and to docs/panel.png with
 * UPDATE_DOCS_SCREENSHOT=1).
 */
import { expect, test, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const badge = (page: Page, label: string) =>
  page.locator('li.task', { has: page.locator('.task-label', { hasText: label }) }).locator('.badge');

test('the panel shows every task state at once (screenshot)', async ({ page }) => {
  test.setTimeout(120_000);
  dir = scratchDir();
  const dataDir = path.join(dir, 'data');

  // A server killed while a task runs leaves that task "interrupted" in its history.
  const killed = await startServe(dataDir);
  const doomed = await killed.submit('forever', ['--interval=200'], { label: 'Index the monorepo (server was killed)' });
  await expect
    .poll(
      async () =>
        await killed
          .api<{ state: string }>('GET', `/api/tasks/${doomed}`)
          .then((d) => (d as unknown as { task: { state: string } }).task.state),
    )
    .toBe('running');
  // Killed once the journal holds the attempt: what history can show of a task is what reached the disk.
  const journal = path.join(dataDir, 'journal.ndjson');
  await expect
    .poll(() => fs.readFileSync(journal, 'utf8').includes(`"e":"attempt","id":"${doomed}"`), { message: 'the attempt in the journal' })
    .toBe(true);
  await killed.stop('SIGKILL');

  serve = await startServe(dataDir, ['--concurrency', '5']);
  // The restarted server lists it (checked through the API first, so a failure says which side lost it).
  await expect
    .poll(() => serve!.api<{ task: { state: string } }>('GET', `/api/tasks/${doomed}`).then((d) => d.task.state), {
      message: `the restarted server's picture of ${doomed}`,
    })
    .toBe('interrupted');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(serve.url);
  await expect(badge(page, 'Index the monorepo')).toHaveText('Interrupted');

  await serve.submit('progress', ['--steps=3', '--interval=100'], { label: 'Refactor the logger module' });
  await serve.submit('fail', ['--steps=1', '--interval=100'], { label: 'Translate the docs to German' });
  const nightly = await serve.submit('forever', ['--interval=300'], { label: 'Nightly dependency audit' });
  await expect(badge(page, 'Refactor the logger module')).toHaveText('Succeeded');
  await expect(badge(page, 'Translate the docs to German')).toHaveText('Failed');
  await expect(badge(page, 'Nightly dependency audit')).toHaveText('Running');
  await serve.api('POST', `/api/tasks/${nightly}/cancel`);
  await expect(badge(page, 'Nightly dependency audit')).toHaveText('Cancelled');

  await serve.submit('progress', ['--steps=600', '--interval=100'], { label: 'Summarise src/ for the design review' });
  await serve.submit('indeterminate', ['--steps=600', '--interval=300'], { label: 'Scan for unused exports' });
  await serve.submit('ask', [], { label: 'Review the open pull request' });
  await serve.submit('crash', ['--interval=100'], { label: 'Call the model API', retries: 6 });
  await expect(badge(page, 'Summarise src/')).toHaveText('Running');
  await expect(badge(page, 'Scan for unused exports')).toHaveText('Running');
  await expect(badge(page, 'Review the open pull request')).toHaveText('Needs answer');
  await expect
    .poll(() => page.locator('li.task', { hasText: 'Summarise src/' }).locator('.progress').getAttribute('aria-valuenow').then(Number))
    .toBeGreaterThan(3);

  await page.locator('#pause').click();
  await expect(page.locator('#paused-banner')).toBeVisible();
  await serve.submit('progress', ['--steps=10'], { label: 'Generate release notes' });
  await expect(badge(page, 'Generate release notes')).toHaveText('Queued');

  await page.locator('li.task', { hasText: 'Translate the docs to German' }).click();
  await expect(page.locator('.details .stderr-tail')).toContainText('HTTP 429');
  // Backoff doubles (1 s, 2 s, 4 s…), so the retrying task is caught between two attempts.
  await expect(badge(page, 'Call the model API')).toHaveText('Retrying', { timeout: 30_000 });

  // The retrying task flips back to Running when its next attempt starts: wait for a moment when
  // every state shows at once (the screenshot below is taken right then).
  const wanted = ['Running', 'Needs answer', 'Retrying', 'Queued', 'Succeeded', 'Failed', 'Cancelled', 'Interrupted'];
  const missingStates = async () => {
    const states = await page.locator('li.task').evaluateAll((rows) => rows.map((row) => row.querySelector('.badge')?.textContent));
    return wanted.filter((state) => !states.includes(state));
  };
  await expect.poll(missingStates, { timeout: 30_000, intervals: [20] }).toEqual([]);
  const shot = test.info().outputPath('panel-all-states.png');
  await page.screenshot({ path: shot });
  fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
  fs.copyFileSync(shot, path.join(ROOT, 'test-results', 'panel-all-states.png'));
  // The README's picture: refreshed on request only, so a test run does not modify tracked files.
  if (process.env.UPDATE_DOCS_SCREENSHOT === '1') fs.copyFileSync(shot, path.join(ROOT, 'docs', 'panel.png'));
  await test.info().attach('panel with every task state', { path: shot, contentType: 'image/png' });

  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = test.info().outputPath('panel-all-states-dark.png');
  await page.screenshot({ path: dark });
  fs.copyFileSync(dark, path.join(ROOT, 'test-results', 'panel-all-states-dark.png'));
});
