/** A task's attachments in the panel: listed with their size, and Download saves the bytes as a file. */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
let serve: Serve;

test.beforeAll(async () => {
  dir = scratchDir();
  serve = await startServe(path.join(dir, 'data'));
});

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a finished task's attachments are listed by name and size and download whole", async ({ page }) => {
  const fixture = path.resolve('test/fixtures/raw-attacher.mjs');
  await serve.submit('attacher', [], { command: 'node', args: [fixture, 'whole'], label: 'attacher' });
  await page.goto(serve.url);
  await page.locator('li.task.state-succeeded', { hasText: 'attacher' }).click();
  const list = page.locator('.details .result ul.attachments');
  const text = 'héllo wörld 🙂 '.repeat(5000);
  await expect(list.locator('li')).toHaveCount(2);
  await expect(list.locator('li').first()).toContainText(`notes.txt ${(Buffer.byteLength(text) / 1024).toFixed(1)} KiB`);
  await expect(list.locator('li').nth(1)).toContainText('blob 7 B');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download notes.txt' }).click()]);
  expect(download.suggestedFilename()).toBe('notes.txt');
  const saved = path.join(dir, 'notes.txt');
  await download.saveAs(saved);
  expect(fs.readFileSync(saved, 'utf8')).toBe(text);
});
