/**
 * The panel shows what the README promises (issue 46 §4, issue 47 §2): a running task's row shows
 * its tokens and cost against its budget, live; a task stopped at its deadline shows what its agent
 * had produced (its partial result: last partial, answer, attachment) under its failure.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

const FIXTURES = path.join(ROOT, 'test', 'fixtures');
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

test("a running task's row shows its tokens and cost against its budget as reports arrive", async ({ page }) => {
  const spec = {
    command: process.execPath,
    args: [path.join(FIXTURES, 'sdk-spender.mjs')],
    label: 'spender',
    maxTokens: 5000,
    maxCostUsd: 2,
  };
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', spec);
  await page.goto(serve.url);
  const row = page.locator(`li.task[data-id="${id}"] .task-sub`);
  await expect(row).toContainText(/[1-9]\d*0\/5000 tokens · \$0\/\$2/);
});

test('a task stopped at its deadline shows its partial result under the failure', async ({ page }) => {
  const spec = { command: process.execPath, args: [path.join(FIXTURES, 'keeps-work.mjs')], label: 'keeper', timeoutMs: 1500 };
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', spec);
  await page.goto(`${serve.url}#task=${id}`);
  const result = page.locator('#details-pane .section.result');
  await expect(result.locator('h3')).toHaveText('Partial result (kept when it was stopped)', { timeout: 20_000 });
  await expect(result).toContainText('half a report');
  await expect(result).toContainText('draft.md');
});
