/**
 * A task whose agent outlives a SIGKILL of the hub (docs/reliability.md, "A task list that survives a
 * restart"): the restarted hub's panel shows it as Recovering, with why, not as ended; a cancel from the
 * panel's API stops its agent and the row ends Cancelled.
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { scratchDir, startServe, type Serve } from './serve.js';

let dir: string;
const hubs: Serve[] = [];

test.afterAll(async () => {
  for (const hub of hubs) await hub.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** True while the process `pid` runs (a zombie, which nobody reaps here, counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

test('a task whose agent outlived the hub reads Recovering in the panel, then ends once cancelled', async ({ page }) => {
  dir = scratchDir();
  const data = path.join(dir, 'data');
  const first = await startServe(data);
  hubs.push(first);
  // An agent that never writes (a write to the dead hub's stdout pipe would end it): it outlives the hub.
  const { id } = await first.api<{ id: string }>('POST', '/api/tasks', {
    command: process.execPath,
    args: ['-e', 'setTimeout(() => {}, 600_000)'],
    label: 'outlives the hub',
    heartbeatTimeoutMs: 0,
    taskIdArg: false,
  });
  type Got = { task: { state: string; pid?: number; recovering?: boolean } };
  await expect.poll(async () => (await first.api<Got>('GET', `/api/tasks/${id}`)).task.pid, { timeout: 30_000 }).toBeGreaterThan(0);
  const { pid } = (await first.api<Got>('GET', `/api/tasks/${id}`)).task;
  await first.stop('SIGKILL');
  expect(alive(pid!)).toBe(true);

  const second = await startServe(data);
  hubs.push(second);
  await page.goto(second.url);
  const row = page.locator(`li.task[data-id="${id}"]`);
  await expect(row.locator('.badge')).toHaveText('Recovering');
  await expect(row).toHaveClass(/state-running/);
  await expect(row).toContainText('its agent outlived a restart of the hub');

  await second.api('POST', `/api/tasks/${id}/cancel`);
  await expect(row.locator('.badge')).toHaveText('Cancelled', { timeout: 30_000 });
  await expect(row).not.toContainText('outlived');
  await expect.poll(() => alive(pid!), { timeout: 30_000 }).toBe(false);
});
