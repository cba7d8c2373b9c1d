/**
 * Headless extras: the footer's "Open" shows the app log as a page, and `serve --keep-token` keeps the
 * panel URL (token included) across restarts, the token in a file only the user can read.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('with --keep-token the URL survives a restart, and Open shows the log as a page', async ({ page, context }) => {
  dir = scratchDir();
  const dataDir = path.join(dir, 'data');
  const first = await startServe(dataDir, ['--keep-token']);
  await first.stop();
  const tokenFile = path.join(dataDir, 'panel-token');
  expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
  expect(fs.readFileSync(tokenFile, 'utf8').trim()).toBe(first.token);

  serve = await startServe(dataDir, ['--keep-token']);
  expect(serve.token).toBe(first.token);
  // Without the flag, a new token every start.
  const fresh = await startServe(path.join(dir, 'other'));
  await fresh.stop();
  expect(fresh.token).not.toBe(first.token);

  await page.goto(serve.url);
  await expect(page.locator('#app')).toHaveAttribute('data-ready', 'true');
  const [logPage] = await Promise.all([context.waitForEvent('page'), page.locator('#open-log').click()]);
  await logPage.waitForLoadState();
  const text = (await logPage.locator('body').textContent()) ?? '';
  expect(text).toContain(`Backchannel log: ${path.join(dataDir, 'logs', 'backchannel.log')}`);
  expect(text).toContain('panel served on');
  // Only with the token.
  const refused = await page.request.get(`${serve.origin}/log`);
  expect(refused.status()).toBe(401);
});
