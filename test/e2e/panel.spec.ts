/**
 * The real headless panel in Debian Chromium: `backchannel serve` as a process, a real broker,
 * real sub-agent processes (scripts/demo-agents/agent.mjs). No fixed sleeps: every wait is for
 * something visible.
 */
import { expect, test, type Locator, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { scratchDir, startServe, type Serve } from './serve.js';

test.describe.configure({ mode: 'serial' });

let dir: string;
let serve: Serve;

test.beforeAll(async () => {
  dir = scratchDir();
  serve = await startServe(path.join(dir, 'data'), ['--concurrency', '3']);
});

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Fails the test if a payload ever manages to open a dialog (alert from injected markup). */
function guardDialogs(page: Page): string[] {
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return dialogs;
}

const row = (page: Page, label: string): Locator =>
  page.locator('li.task', {
    has: page.locator('.task-label', { hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
  });

/** Labels and groups (0 running, 1 queued, 2 finished) of the rows, top to bottom. */
async function order(page: Page): Promise<{ label: string; group: number }[]> {
  return page.locator('li.task').evaluateAll((els) =>
    els.map((el) => {
      const state = /state-(\w+)/.exec(el.className)?.[1] ?? '';
      const group = state === 'running' || state === 'retrying' ? 0 : state === 'queued' ? 1 : 2;
      return { label: el.querySelector('.task-label')?.textContent ?? '', group };
    }),
  );
}

async function progressOf(r: Locator): Promise<number> {
  // CSS, not the progressbar role: a finished task's bar is hidden but keeps its last value.
  return Number((await r.locator('.progress').getAttribute('aria-valuenow')) ?? -1);
}

test('a new user sees an empty state, then starts a task from a preset and watches its progress bar move', async ({ page }) => {
  await page.goto(serve.url);
  await expect(page.locator('#empty')).toBeVisible();
  await expect(page.locator('#empty')).toContainText('No tasks yet');

  await page.locator('#new-task').click();
  const dialog = page.locator('#new-task-dialog');
  await expect(dialog).toBeVisible();
  await expect(page.locator('#new-source')).toHaveValue('0'); // the first preset
  await page.locator('#new-args').fill('--mode=progress\n--steps=40\n--interval=250');
  await page.locator('#new-label').fill('ui progress');
  await dialog.getByRole('button', { name: 'Start task' }).click();
  await expect(dialog).toBeHidden();

  const r = row(page, 'ui progress');
  await expect(r.locator('.badge')).toHaveText('Running');
  await expect.poll(() => progressOf(r)).toBeGreaterThan(0);
  const first = await progressOf(r);
  await expect.poll(() => progressOf(r)).toBeGreaterThan(first);
  await expect(page.locator('#empty')).toBeHidden();
  await expect(r.locator('.badge')).toHaveText('Succeeded');
  await expect(r.getByRole('progressbar')).toBeHidden();
});

test('rows are ordered running, queued, finished and move when a task changes state', async ({ page }) => {
  await page.goto(serve.url);
  for (const name of ['slot 1', 'slot 2', 'slot 3']) await serve.submit('forever', ['--interval=200'], { label: name });
  await serve.submit('progress', ['--steps=2', '--interval=50'], { label: 'waits for a slot' });

  await expect(row(page, 'waits for a slot').locator('.badge')).toHaveText('Queued');
  await expect(row(page, 'slot 3').locator('.badge')).toHaveText('Running');
  // A running task without a percentage shows an indeterminate bar; queued shows an empty one.
  let rows = await order(page);
  expect(rows.map((r) => r.group)).toEqual([...rows.map((r) => r.group)].sort((a, b) => a - b));
  expect(rows.findIndex((r) => r.label === 'waits for a slot')).toBe(3);
  expect(rows.at(-1)).toEqual({ label: 'ui progress', group: 2 });

  await serve.api('POST', `/api/tasks/${await idOf(page, 'slot 1')}/cancel`);
  await expect(row(page, 'waits for a slot').locator('.badge')).toHaveText('Succeeded');
  rows = await order(page);
  expect(rows.map((r) => r.group)).toEqual([...rows.map((r) => r.group)].sort((a, b) => a - b));
  // The most recently finished task leads the finished group, above the one cancelled before it.
  expect(
    rows
      .slice(0, 2)
      .map((r) => r.label)
      .sort(),
  ).toEqual(['slot 2', 'slot 3']);
  expect(rows[2]).toEqual({ label: 'waits for a slot', group: 2 });
  expect(rows[3]).toEqual({ label: 'slot 1', group: 2 });
});

async function idOf(page: Page, label: string): Promise<string> {
  return (await row(page, label).getAttribute('data-id'))!;
}

test('cancelling a running task from its details ends it as cancelled', async ({ page }) => {
  await page.goto(serve.url);
  await row(page, 'slot 2').click();
  const details = page.locator('.details');
  await expect(details.locator('.details-title')).toHaveText('slot 2');
  await details.getByRole('button', { name: 'Cancel task' }).click();
  await expect(details.locator('.badge')).toHaveText('Cancelled');
  await expect(row(page, 'slot 2').locator('.badge')).toHaveText('Cancelled');
  await expect(details.locator('.failure')).toContainText('Why it was cancelled');
  await expect(details.getByRole('button', { name: 'Retry' })).toBeVisible();
  await expect(details.getByRole('button', { name: 'Cancel task' })).toBeHidden();
});

test("a finished task's details show its result, meta, command and log, and Copy copies the JSON", async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.goto(serve.url);
  await row(page, 'ui progress').click();
  const details = page.locator('.details');
  await expect(details.locator('.result h3')).toHaveText('Result data');
  await expect(details.locator('.result .json')).toContainText('"summary":');
  await expect(details.locator('.result .json')).toContainText('"did 40 steps"');
  // Collapsible: the nested array can be folded.
  const nested = details.locator('.result details.json-node details.json-node').first();
  await expect(nested).toHaveAttribute('open', '');
  await nested.locator('summary').first().click();
  await expect(nested).not.toHaveAttribute('open', '');
  await expect(details.locator('.meta')).toContainText('demo-model-1');
  await expect(details.locator('.meta')).toContainText('4800 input, 1600 output');
  await expect(details.locator('.meta')).toContainText('Delivered via');
  await expect(details.locator('.meta')).toContainText('socket');
  await expect(details.locator('.command-line')).toContainText('agent.mjs --mode=progress --steps=40 --interval=250');
  await expect(details.locator('.cwd')).toContainText(path.resolve('.'));
  await expect(details.locator('.log')).toContainText('demo agent started in mode progress');

  await details.getByRole('button', { name: /Copy result data/ }).click();
  await expect(page.locator('#toast')).toHaveText('Copied');
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText())) as Record<string, unknown>;
  expect(copied).toMatchObject({ summary: 'did 40 steps', files: 120 });
});

test('a failed task shows its reason and the tail of its stderr', async ({ page }) => {
  await page.goto(serve.url);
  await serve.submit('crash', ['--interval=50'], { label: 'crashy' });
  await serve.submit('fail', ['--steps=1', '--interval=50'], { label: 'rate limited' });
  await expect(row(page, 'crashy').locator('.badge')).toHaveText('Failed');
  await expect(row(page, 'crashy').locator('.task-sub')).toContainText('exited with code 3');
  await row(page, 'crashy').click();
  const details = page.locator('.details');
  await expect(details.locator('.failure-reason')).toContainText('crashed');
  await expect(details.locator('.stderr-tail')).toContainText('OPENAI_API_KEY is not set; crashing on purpose');

  await row(page, 'rate limited').click();
  await expect(details.locator('.details-title')).toHaveText('rate limited');
  await expect(details.locator('.failure')).toContainText('The model provider rate-limited every request');
  await expect(details.locator('.stderr-tail')).toContainText('HTTP 429');
});

test('agent data is shown as text, never as HTML', async ({ page }) => {
  const dialogs = guardDialogs(page);
  await page.goto(serve.url);
  const label = '<img src=x onerror=alert(1)> ../../etc/passwd';
  await serve.submit('markup', ['--steps=1', '--interval=20'], { label });
  const r = row(page, label);
  await expect(r.locator('.badge')).toHaveText('Succeeded');
  await r.click();
  const details = page.locator('.details');
  await expect(details.locator('.details-title')).toHaveText(label);
  await expect(details.locator('.result .json')).toContainText('"<script>alert(\\"owned\\")</script><img src=x onerror=alert(1)>"');
  await expect(details.locator('.result .json')).toContainText('"../../etc/passwd"');
  await expect(page.locator('img')).toHaveCount(0);
  await expect(page.locator('body script')).toHaveCount(0);
  expect(dialogs).toEqual([]);
});

test('a question from a sub-agent is answered from the panel', async ({ page }) => {
  await page.goto(serve.url);
  await serve.submit('ask', [], { label: 'asks a question' });
  const r = row(page, 'asks a question');
  await expect(r.locator('.badge')).toHaveText('Needs answer');
  await expect(r.locator('.task-sub')).toHaveText('Asks: Which branch should I review?');
  await r.click();
  const question = page.locator('.details .question');
  await expect(question).toContainText('Which branch should I review?');
  await question.getByRole('button', { name: 'dev' }).click();
  await expect(r.locator('.badge')).toHaveText('Succeeded');
  await expect(page.locator('.details .result .json')).toContainText('"branch": "dev"');
  await expect(question).toBeHidden();
});

test('the list and details work from the keyboard', async ({ page }) => {
  await page.goto(serve.url);
  await expect(page.locator('li.task').first()).toBeVisible();
  await page.keyboard.press('/');
  const labels = await page.locator('li.task .task-label').allTextContents();
  await expect(page.locator('li.task').first()).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(page.locator('li.task').nth(1)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.locator('.details .details-title')).toHaveText(labels[1]!);
  await expect(page).toHaveURL(/#task=/);
  await page.keyboard.press('Escape');
  await expect(page.locator('#details-pane')).toBeHidden();
  await expect(page.locator('li.task').nth(1)).toBeFocused();
  await page.keyboard.press('n');
  await expect(page.locator('#new-task-dialog')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.locator('#new-task-dialog')).toBeHidden();
});

test('a page opened with a wrong token is refused with a message that says what to do', async ({ page }) => {
  await page.goto(`${serve.origin}/?token=${'0'.repeat(64)}`);
  // The page itself is refused: only the token holder gets even the HTML.
  await expect(page.locator('body')).toContainText('Missing or wrong token');
  const response = await page.request.get(`${serve.origin}/api/tasks`);
  expect(response.status()).toBe(401);
});

test('history: a reload and a restart of the server both show the finished tasks', async ({ page }) => {
  await page.goto(serve.url);
  await row(page, 'crashy').click();
  await page.reload();
  // The open task survives the reload (#task=…), and so does the list.
  await expect(page.locator('.details .details-title')).toHaveText('crashy');
  await expect(row(page, 'ui progress').locator('.badge')).toHaveText('Succeeded');

  await serve.stop('SIGINT');
  serve = await startServe(serve.dataDir, ['--concurrency', '3']);
  await page.goto(serve.url);
  await expect(row(page, 'ui progress').locator('.badge')).toHaveText('Succeeded');
  await expect(row(page, 'crashy').locator('.badge')).toHaveText('Failed');
  await expect(row(page, 'slot 2').locator('.badge')).toHaveText('Cancelled');
  // slot 3 was still running when the server stopped: it was cancelled on the way out.
  await expect(row(page, 'slot 3').locator('.badge')).toHaveText('Cancelled');
  await row(page, 'ui progress').click();
  await expect(page.locator('.details .result .json')).toContainText('"did 40 steps"');
  // The old URL's token no longer works.
  const stale = await page.request.get(`${serve.origin}/api/info?token=${'0'.repeat(64)}`);
  expect(stale.status()).toBe(401);
});
