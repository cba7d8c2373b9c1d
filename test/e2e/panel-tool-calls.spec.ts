/**
 * A task waiting on its caller's tool shows `waiting for <tool>` in the panel (the row and the
 * details), and goes on once the call is answered over the hub's API. Real `backchannel serve`, a
 * real SDK agent (test/fixtures/tool-caller.mjs), Debian Chromium.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

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

test('a task waiting on a tool call says which, and goes on once it is answered', async ({ page }) => {
  await page.goto(serve.url);
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', {
    command: process.execPath,
    args: [path.join(ROOT, 'test/fixtures/tool-caller.mjs')],
    label: 'calls a tool',
    input: { calls: [{ name: 'Read', arguments: { path: 'a.txt' } }] },
    tools: [{ name: 'Read', description: 'Reads a file', input_schema: { type: 'object' } }],
  });
  const row = page.locator('li.task', { has: page.locator('.task-label', { hasText: /^calls a tool$/ }) });
  await expect(row.locator('.task-sub')).toHaveText('Waiting for Read');
  await row.click();
  await expect(page.locator('.details')).toContainText('Running, waiting for Read');

  const { task } = await serve.api<{ task: { pendingToolCalls: Array<{ callId: string }> } }>('GET', `/api/tasks/${id}`);
  await serve.api('POST', `/api/tasks/${id}/tool-calls/${encodeURIComponent(task.pendingToolCalls[0]!.callId)}`, {
    answer: { content: 'text of a' },
  });
  await expect(row.locator('.badge')).toHaveText('Succeeded');
  await expect(row.locator('.task-sub')).not.toContainText('Waiting for');
});
