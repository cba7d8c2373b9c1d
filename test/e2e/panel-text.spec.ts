/**
 * What the panel says: the empty state promises nothing it cannot do and shows no spinner, and a
 * finished task's row and details read plainly (no doubled "error: failed:", no "none" model, the
 * two durations named apart, no "(no output yet)" once the task is over).
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { AGENT, scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve | undefined;

test.beforeAll(async () => {
  dir = scratchDir();
  serve = await startServe(path.join(dir, 'data'));
});

test.afterAll(async () => {
  await serve?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('the empty panel offers New task only, with a still picture rather than a spinner', async ({ page }) => {
  await page.goto(serve!.url);
  const empty = page.locator('#empty');
  await expect(empty).toBeVisible();
  await expect(empty).toContainText('No tasks yet');
  await expect(empty).not.toContainText('backchannel run');
  // A spinner is a ring with one coloured arc: the mark's four borders must look the same, and not move.
  const mark = await page.locator('.empty-mark').evaluate((el) => {
    const style = getComputedStyle(el);
    return {
      colors: new Set([style.borderTopColor, style.borderRightColor, style.borderBottomColor, style.borderLeftColor]).size,
      animation: style.animationName,
    };
  });
  expect(mark).toEqual({ colors: 1, animation: 'none' });
});

test('a failed and a quiet finished task read plainly in the row and the details', async ({ page }) => {
  await page.goto(serve!.url);
  const failed = await serve!.api<{ id: string }>('POST', '/api/tasks', {
    command: AGENT,
    args: ['--mode=fail', '--steps=1', '--interval=10'],
    label: 'rate limited',
  });
  // It holds until the test opens the gate (at most 60 s), so it is surely running when its details open.
  const gate = path.join(dir, 'quiet-gate');
  const quiet = await serve!.api<{ id: string }>('POST', '/api/tasks', {
    command: 'sh',
    args: [
      '-c',
      `i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; ` +
        `printf 'data: {"task_id":"%s","status":"success","data":{"ok":true},"meta":{"model_used":"none","duration_ms":7}}\\n\\n' "$CURSOR_TASK_ID"`,
      gate,
    ],
    label: 'quiet success',
  });
  const row = (label: string) => page.locator('li.task', { has: page.locator('.task-label', { hasText: label }) });
  // Opened while it runs, then it ends: the log placeholder must follow.
  await expect(row('quiet success').locator('.badge')).toHaveText('Running');
  await row('quiet success').click();
  await expect(page.locator('.details .log')).toHaveText('(no output yet)');
  fs.writeFileSync(gate, '');
  await expect(row('rate limited').locator('.badge')).toHaveText('Failed');
  await expect(row('quiet success').locator('.badge')).toHaveText('Succeeded');
  await expect(page.locator('.details .log')).toContainText('the task printed nothing');
  await expect(row('rate limited')).toContainText('The sub-agent reported an error: The model provider rate-limited every request');
  await expect(row('quiet success')).not.toContainText('none');

  await page.goto(`${serve!.url}#task=${failed.id}`);
  const details = page.locator('.details');
  await expect(details.locator('.failure-reason')).toHaveText(
    'The sub-agent reported an error: The model provider rate-limited every request',
  );

  await row('quiet success').click();
  await expect(page.locator('.details-title')).toHaveText('quiet success');
  const terms = await details.locator('dt').allTextContents();
  expect(terms).toContain('Run time');
  expect(terms).toContain('Reported duration');
  expect(terms).not.toContain('Took');
  expect(terms).not.toContain('Duration');
  expect(terms).not.toContain('Model');
  await expect(details.locator('.log')).toContainText('the task printed nothing');
  expect(quiet.id).toBeTruthy();
});
