/**
 * `serve --redis` with two real `backchannel worker`s (real redis-server): the panel shows which
 * worker runs each task and the fleet in its footer. Skips with the reason where redis-server is missing.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorker, type WorkerProcess } from '../fleet/workers.js';
import { AGENT, scratchDir, startServe, type Serve } from './serve.js';

let dir: string | undefined;
let redis: TestRedis | undefined;
let serve: Serve | undefined;
const workers: WorkerProcess[] = [];

test.afterAll(async () => {
  await serve?.stop();
  await Promise.all(workers.map((w) => w.stop()));
  await redis?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('the panel shows the worker of each task and the fleet', async ({ page }) => {
  test.skip(REDIS_MISSING !== undefined, `skipped: ${REDIS_MISSING}`);
  dir = scratchDir();
  redis = await startRedis();
  const ipcDir = path.join(dir, 'ipc');
  for (const name of ['laptop-a', 'ci-b']) {
    workers.push(await startWorker(redis.url, { queue: 'e2e', name, allow: [AGENT], ipcDir, concurrency: 2 }));
  }
  serve = await startServe(path.join(dir, 'data'), ['--redis', redis.url, '--queue', 'e2e']);
  await page.goto(serve.url);
  for (let i = 0; i < 4; i++) await serve.submit('progress', ['--steps=3', '--interval=100'], { label: `fleet task ${i}` });

  const rows = page.locator('li.task');
  await expect(rows).toHaveCount(4);
  await expect(rows.locator('.badge', { hasText: 'Succeeded' })).toHaveCount(4);
  const shown = await rows.locator('.task-worker').allTextContents();
  expect(shown.every((text) => /^on (laptop-a|ci-b)$/.test(text))).toBe(true);
  await expect(page.locator('#fleet')).toContainText('ci-b');
  await expect(page.locator('#fleet')).toContainText('laptop-a');

  // A command line no worker allows: the hub's policy lets it through (this config allows anything),
  // the worker refuses it — shown as a refusal, not as a crash.
  await serve.api('POST', '/api/tasks', { command: 'sh', args: ['-c', 'echo pwned'], label: 'not allowed' });
  const refused = page.locator('li.task', { has: page.locator('.task-label', { hasText: /^not allowed$/ }) });
  await expect(refused.locator('.badge')).toHaveText('Failed');
  await expect(refused).toContainText('Refused (not allowed to run): worker');
  await expect(refused).toContainText('refuses `sh -c echo pwned`: not an allowed command');
  await expect(refused).not.toContainText('crashed');
});
