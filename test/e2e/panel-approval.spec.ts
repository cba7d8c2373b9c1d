/**
 * The panel's approval card (src/renderer/approval-card.ts): an ACP agent's permission request, as
 * the ACP adapter asks it, shows the tool call's kind, action and paths and one button per option the
 * agent offers; clicking one answers with that option, through the panel's door (docs/acp.md).
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

const APPROVER = path.join(ROOT, 'test', 'acp-integration', 'fixtures', 'approver.mjs');
const ACP_AGENT = path.join(ROOT, 'test', 'fixtures', 'acp', 'agent.mjs');

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

test('an approval shows its tool call and the agent’s options; a click answers with one', async ({ page }) => {
  const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', { command: APPROVER, label: 'approval task' });
  await page.goto(`${serve.url}#task=${id}`);
  await expect(page.locator(`li.task[data-id="${id}"] .badge`)).toHaveText('Needs approval');
  const card = page.getByRole('region', { name: 'Approval' });
  await expect(card).toBeVisible();
  await expect(card.getByRole('heading', { name: 'Needs approval' })).toBeVisible();
  await expect(card.locator('dl')).toContainText('Tooledit');
  await expect(card.locator('dl')).toContainText('ActionWrite notes.md');
  await expect(card.locator('dl')).toContainText('Paths/work/notes.md');
  const options = card.getByRole('button');
  await expect(options).toHaveText(['Allow once', 'Always allow', 'Reject']);

  await card.getByRole('button', { name: 'Always allow' }).click();
  await expect.poll(async () => (await serve.api<{ task: { state: string } }>('GET', `/api/tasks/${id}`)).task.state).toBe('succeeded');
  const { task } = await serve.api<{ task: { result: { data: unknown } } }>('GET', `/api/tasks/${id}`);
  expect(task.result.data).toEqual({ option: 'allow-always', via: 'panel' });
  await expect(card).toBeHidden();
});

test('New task offers a named ACP agent as a preset, and runs it as an ACP task', async ({ page }) => {
  const own = scratchDir();
  const config = path.join(own, 'config.yaml');
  fs.writeFileSync(config, `acp:\n  agents:\n    fixture: { command: ${JSON.stringify(ACP_AGENT)}, prompt: "the nightly prompt" }\n`);
  const hub = await startServe(path.join(own, 'data'), [], { BACKCHANNEL_CONFIG: config });
  try {
    await page.goto(hub.url);
    await page.locator('#new-task').click();
    const dialog = page.locator('#new-task-dialog');
    const option = page.locator('#new-source option', { hasText: 'acp:fixture' });
    await page.locator('#new-source').selectOption((await option.getAttribute('value'))!);
    await expect(page.locator('#new-command')).toHaveValue(ACP_AGENT);
    await expect(page.locator('#new-input')).toHaveValue('"the nightly prompt"');
    await page.locator('#new-input').fill('"hi from the panel"');
    await dialog.getByRole('button', { name: 'Start task' }).click();
    await expect(dialog).toBeHidden();
    const listed = () => hub.api<Array<{ id: string; state: string }>>('GET', '/api/tasks');
    await expect.poll(async () => (await listed()).map((t) => t.state)).toEqual(['succeeded']);
    const [{ id }] = (await listed()) as [{ id: string }];
    const { task } = await hub.api<{ task: { result: { data: { text: string } } } }>('GET', `/api/tasks/${id}`);
    expect(task.result.data.text).toBe('echo: hi from the panel');

    // A schedule made from the same preset fires the agent as an ACP task, with the prompt the config gives it.
    await page.getByRole('button', { name: 'Schedules' }).click();
    await page.locator('section.schedules .schedules-head').getByRole('button', { name: 'New schedule' }).click();
    const form = page.locator('#new-schedule-dialog');
    await page.locator('#sched-name').fill('acp-hourly');
    await page.locator('#sched-every').fill('1h');
    const source = page.locator('#sched-source option', { hasText: 'acp:fixture' });
    await page.locator('#sched-source').selectOption((await source.getAttribute('value'))!);
    await form.getByRole('button', { name: 'Create schedule' }).click();
    await expect(form).toBeHidden();
    const { taskId: fired } = await hub.api<{ taskId: string }>('POST', '/api/schedules/acp-hourly/run', {});
    await expect.poll(async () => (await listed()).find((t) => t.id === fired)?.state).toBe('succeeded');
    const run = await hub.api<{ task: { result: { data: { text: string } } } }>('GET', `/api/tasks/${fired}`);
    expect(run.task.result.data.text).toBe('echo: the nightly prompt');
  } finally {
    await hub.stop();
    fs.rmSync(own, { recursive: true, force: true });
  }
});
