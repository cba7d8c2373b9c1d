/**
 * The panel under the owner's default run policy (`backchannel serve` as a process, Debian Chromium):
 * a preset starts; an arbitrary command line typed into New task is refused — the dialog says so,
 * and why, and where the owner allows more — and nothing runs.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve;

test.beforeAll(async () => {
  dir = scratchDir();
  // No config file: the defaults.
  serve = await startServe(path.join(dir, 'data'), [], { BACKCHANNEL_CONFIG: path.join(dir, 'no-config.yaml') });
});

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('New task refuses a command line the run policy does not allow, and says why; a preset runs', async ({ page }) => {
  await page.goto(serve.url);
  const mark = path.join(dir, 'pwned');
  await page.locator('#new-task').click();
  const dialog = page.locator('#new-task-dialog');
  await page.locator('#new-command').fill('sh');
  await page.locator('#new-args').fill(`-c\ntouch ${mark}`);
  await page.locator('#new-label').fill('not allowed');
  await dialog.getByRole('button', { name: 'Start task' }).click();
  const error = dialog.locator('.form-error');
  await expect(error).toContainText(`refused \`sh -c touch ${mark}\``);
  await expect(error).toContainText('from the panel: not a template, a preset or a command the run policy allows');
  await expect(error).toContainText('run_policy: allow:');
  await expect(dialog).toBeVisible();
  expect(fs.existsSync(mark)).toBe(false);

  // The first preset, as offered: it runs.
  await page.locator('#new-source').selectOption('0');
  await page.locator('#new-label').fill('a preset');
  await dialog.getByRole('button', { name: 'Start task' }).click();
  await expect(dialog).toBeHidden();
  const row = page.locator('li.task', { has: page.locator('.task-label', { hasText: /^a preset$/ }) });
  await expect(row.locator('.badge')).toHaveText('Succeeded', { timeout: 30_000 });
  await expect(page.locator('li.task', { has: page.locator('.task-label', { hasText: /^not allowed$/ }) })).toHaveCount(0);
});
