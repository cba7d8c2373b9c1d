/**
 * Issue 22 item 4: a big result reaches the panel as a summary only (the event stream and the task
 * list stay small); the details view fetches the whole result on demand (`taskResult`), shows a
 * loading state meanwhile, then the first part of it with Copy and Download for all of it.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const BYTES = 3 * 1024 * 1024;

test('the details of a task with a 3 MB result fetch it on demand and show its beginning, with Copy and Download of all of it', async ({
  page,
}) => {
  test.setTimeout(120_000);
  dir = scratchDir();
  serve = await startServe(path.join(dir, 'data'));
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', {
    command: path.join(ROOT, 'test', 'fixtures', 'big-result.mjs'),
    input: { bytes: BYTES },
    label: 'Dump the whole index',
  });
  await expect.poll(() => serve!.api<{ task: { state: string } }>('GET', `/api/tasks/${id}`).then((d) => d.task.state)).toBe('succeeded');
  const listed = await serve.api<{ id: string; result?: unknown; resultSummary?: { bytes: number } }[]>('GET', '/api/tasks');
  const summary = listed.find((task) => task.id === id)!;
  expect(summary.result).toBeUndefined();
  expect(summary.resultSummary!.bytes).toBeGreaterThan(BYTES);

  // Slow the result down so the loading state is seen, and count the fetches.
  const fetches: string[] = [];
  await page.route(`**/api/tasks/${id}/result`, async (route) => {
    fetches.push(route.request().url());
    await new Promise((resolve) => setTimeout(resolve, 500));
    await route.continue();
  });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${serve.url}#task=${id}`);
  const result = page.locator('.details .section.result');
  await expect(result.locator('.result-loading')).toContainText('Loading the whole result');
  await expect(result.locator('.result-preview')).toContainText('abcdefghij你好');
  await expect(result.locator('.result-text')).toContainText('"text": "abcdefghij你好', { timeout: 30_000 });
  await expect(result.locator('.result-cut')).toContainText(/Showing the first 64(\.0)? KiB of 4\.\d MiB/);
  const shown = await result.locator('.result-text').innerText();
  expect(shown.length).toBeLessThanOrEqual(64 * 1024);

  const downloading = page.waitForEvent('download');
  await result.getByRole('button', { name: 'Download the whole result as JSON' }).click();
  const download = await downloading;
  const saved = JSON.parse(fs.readFileSync((await download.path())!, 'utf8')) as { text: string };
  expect(saved.text.length).toBe(BYTES);
  expect(fetches).toHaveLength(1);
  expect(errors).toEqual([]);
});
