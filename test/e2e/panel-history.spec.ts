/**
 * Issue 27: the panel over a long history. The event stream's first picture is live tasks and the
 * newest page only; older tasks page in when the end of the list scrolls into view; the counts are
 * the hub's (every task, not those listed); an old task opened by its link is fetched with its
 * details. A real `backchannel serve` over 1,200 finished tasks written into its data directory.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { writeHistory } from '../../bench/lib/history.js';
import { scratchDir, startServe, type Serve } from './serve.js';

test.describe.configure({ mode: 'serial' });

let dir: string;
let serve: Serve;
let ids: string[];

test.beforeAll(async () => {
  dir = scratchDir();
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Twelve failed tasks, two of them among the newest 200.
  ids = writeHistory(dataDir, { count: 1200, states: (i: number) => (i % 100 === 7 ? 'failed' : 'succeeded') });
  serve = await startServe(dataDir, ['--history-limit', '5000']);
});

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the newest page shows first, the counts are of every task, and older pages come in as the list scrolls', async ({ page }) => {
  await page.goto(serve.url);
  await expect(page.locator('#app')).toHaveAttribute('data-ready', 'true');
  await expect(page.locator('li.task')).toHaveCount(200);
  await expect(page.locator('li.task').first().locator('.task-label')).toHaveText('task 1199');
  await expect(page.locator('#counts')).toHaveText('12 failed');

  // "Show older tasks" (pressed without scrolling to it): the next page.
  await page.locator('#older-tasks').dispatchEvent('click');
  await expect(page.locator('li.task')).toHaveCount(400);
  await expect(page.locator('li.task').nth(399).locator('.task-label')).toHaveText('task 800');
  // The end of the list scrolled into view, again and again: every page, to the oldest.
  await expect(async () => {
    await page
      .locator('#older-tasks')
      .scrollIntoViewIfNeeded({ timeout: 1000 })
      .catch(() => {});
    expect(await page.locator('li.task').count()).toBe(1200);
  }).toPass({ timeout: 60_000 });
  await expect(page.locator('li.task').last().locator('.task-label')).toHaveText('task 0');
  await expect(page.locator('.older-tasks')).toBeHidden();
  await expect(page.locator('#counts')).toHaveText('12 failed');
});

test('an old task opened by its link is fetched: selected in the list, with its details and result', async ({ page }) => {
  await page.goto(`${serve.url}#task=${ids[3]}`);
  await expect(page.locator('.details .details-title')).toHaveText('task 3');
  await expect(page.locator('.details .result .json')).toContainText('"result 3"');
  await expect(page.locator('li.task[aria-selected="true"] .task-label')).toHaveText('task 3');
  // Listed once, among the newest page (not paged in twice when the pages reach it).
  await expect(page.locator('li.task')).toHaveCount(201);
});
