/**
 * The details pane at a glance (issue 25): the gateway's tags (`source`, `model`, `stream`, `api`),
 * which `tasks --json` has, are shown with the command; and the "Task started" toast sits on the
 * footer, never over the details it opens (it covered the COMMAND heading).
 */
import { expect, test, type Locator } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { AGENT, scratchDir, startServe, type Serve } from './serve.js';

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

function overlap(a: { x: number; y: number; width: number; height: number }, b: typeof a): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

async function box(locator: Locator) {
  const found = await locator.boundingBox();
  expect(found, `${locator} has no box`).not.toBeNull();
  return found!;
}

test("a task's tags show beside its command in the details", async ({ page }) => {
  const tags = { source: 'gateway', model: 'gpt-x', stream: 'true', api: 'openai' };
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', { command: AGENT, args: ['--mode=quick'], label: 'tagged', tags });
  await page.goto(`${serve.url}#task=${id}`);
  const command = page.locator('#details-pane .section', { has: page.locator('h3', { hasText: 'Command' }) });
  await expect(command.locator('.tags dt')).toHaveText(Object.keys(tags));
  await expect(command.locator('.tags dd')).toHaveText(Object.values(tags));
});

for (const width of [720, 1100]) {
  test(`the "Task started" toast covers nothing of the details it opens (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 600 });
    await page.goto(serve.url);
    await page.locator('#new-task').click();
    const dialog = page.locator('#new-task-dialog');
    await page.locator('#new-args').fill('--mode=progress\n--steps=4\n--interval=200');
    await page.locator('#new-label').fill(`toast ${width}`);
    await dialog.getByRole('button', { name: 'Start task' }).click();
    const toast = page.locator('#toast.visible');
    await expect(toast).toHaveText('Task started');
    const heading = page.locator('#details-pane h3', { hasText: 'Command' });
    await expect(heading).toBeVisible();
    // Where the toast is drawn (it stays in place, only fading out after 2.5 s).
    const toastBox = await box(page.locator('#toast'));
    const footer = await box(page.locator('footer.foot'));
    expect(overlap(toastBox, await box(heading))).toBe(false);
    expect(overlap(toastBox, await box(page.locator('#details-pane')))).toBe(false);
    expect(toastBox.y).toBeGreaterThanOrEqual(footer.y - 1);
  });
}
