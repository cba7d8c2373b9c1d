/**
 * Insights from real tasks: uPlot draws the charts (canvas), the tables show the broker's own
 * aggregates, and clicking a heatmap cell lists the tasks behind it, which open. Screenshot in
 * test-results/ (and docs/insights.png with UPDATE_DOCS_SCREENSHOT=1).
 */
import { expect, test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import type { Insights } from '../../src/model/insights.js';
import { writeJournal, type GeneratedTask } from '../insights/generate.js';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

const AGENT = path.join(ROOT, 'test', 'insights', 'fixtures', 'model-agent.mjs');
let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('insights chart real tasks and show the aggregates the broker computed', async ({ page }) => {
  test.setTimeout(120_000);
  dir = scratchDir();
  // A day and a half of earlier history (three agents, two models), then real tasks on top.
  const now = Date.now();
  const history: GeneratedTask[] = Array.from({ length: 360 }, (_, i) => ({
    agent: ['summarise.mjs', 'review.py', 'index-repo.ts'][i % 3]!,
    model: i % 2 ? 'gpt-a' : 'gpt-b',
    label: ['summarise', 'review', 'index'][i % 3],
    endedAt: new Date(now - 36 * 3_600_000 + i * 360_000).toISOString(),
    durationMs: 400 + ((i * 7919) % 6000) * (i % 3 === 2 ? 3 : 1),
    tokens: { input: 500 + ((i * 31) % 900), output: 80 + ((i * 17) % 200) },
    ...(i % 11 === 0 ? { reason: 'timeout' as const } : i % 17 === 0 ? { reason: 'error' as const } : {}),
  }));
  writeJournal(path.join(dir, 'data'), history);
  serve = await startServe(path.join(dir, 'data'));
  const runs: Array<[string, string[]]> = [
    ['summarise', ['--model=gpt-a', '--input=1200', '--output=300', '--ms=40']],
    ['summarise', ['--model=gpt-a', '--input=900', '--output=200', '--ms=120']],
    ['summarise', ['--model=gpt-a', '--input=1000', '--output=250', '--fail']],
    ['summarise', ['--model=gpt-b', '--input=700', '--output=100', '--ms=60']],
    ['summarise', ['--model=gpt-b', '--input=800', '--output=150', '--ms=200']],
    ['review', ['--model=gpt-b', '--input=300', '--output=90']],
  ];
  const ids: string[] = [];
  for (const [label, args] of runs) {
    const { id } = await serve.api<{ id: string }>('POST', '/api/tasks', { command: AGENT, args, label });
    ids.push(id);
  }
  await expect
    .poll(async () => {
      const tasks = await serve!.api<Array<{ id: string; state: string }>>('GET', '/api/tasks');
      return tasks.filter((t) => ids.includes(t.id) && (t.state === 'succeeded' || t.state === 'failed')).length;
    })
    .toBe(runs.length);
  const since = new Date(now - 7 * 24 * 3_600_000).toISOString();
  const byModel = await serve.api<Insights>('POST', '/api/insights', { by: 'model', since });
  expect(byModel.total.count).toBe(366);

  await page.goto(serve.url);
  await page.getByRole('button', { name: 'Insights' }).click();
  const view = page.locator('.insights');
  await expect(view.locator('.insights-chart canvas')).toHaveCount(2);
  await page.locator('select[name="by"]').selectOption('model');
  await expect(view.locator('.figures').first().locator('thead th').first()).toHaveText('model');
  for (const figures of byModel.groups) {
    const row = view.locator('.figures').first().locator(`tr[data-key="${figures.key}"]`);
    await expect(row.locator('td').nth(0)).toHaveText(String(figures.count));
    await expect(row.locator('td').nth(1)).toHaveText(`${(figures.successRate * 100).toFixed(1)}%`);
    await expect(row.locator('td[data-column="tokens in"]')).toHaveText(String(figures.tokensIn));
    await expect(row.locator('td[data-column="tokens out"]')).toHaveText(String(figures.tokensOut));
  }
  // The A/B table puts gpt-a and gpt-b side by side on "summarise".
  const ab = byModel.ab.filter((row) => row.label === 'summarise');
  expect(ab.map((row) => row.figures.key).sort()).toEqual(['gpt-a', 'gpt-b']);
  for (const row of ab) {
    await expect(view.locator(`tr[data-key="summarise · ${row.figures.key}"] td`).nth(1)).toHaveText(String(row.figures.count));
  }

  // Hovering a chart shows its numbers in the legend. `hover()` waits for the chart the new grouping
  // draws: a bounding box read at once can meet the old one gone and the new one not yet there (null).
  await view.locator('.insights-chart .u-over').first().hover();
  await expect(view.locator('.insights-chart').first().locator('.u-legend .u-value').nth(1)).not.toHaveText('');

  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.locator('select[name="by"]').selectOption('agent');
  await expect(view.locator('.figures').first().locator('thead th').first()).toHaveText('agent');
  fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
  await page.screenshot({ path: path.join(ROOT, 'test-results', 'insights.png') });
  if (process.env.UPDATE_DOCS_SCREENSHOT === '1') await page.screenshot({ path: path.join(ROOT, 'docs', 'insights.png') });

  // Clicking a heatmap cell lists the tasks behind it; one opens in the task details.
  await view
    .locator('.heatmap tr', { has: page.locator('th', { hasText: 'model-agent.mjs' }) })
    .locator('td.heat')
    .last()
    .click();
  const picked = view.locator('.picked-tasks button');
  await expect(picked).toHaveCount(runs.length);
  expect((await picked.evaluateAll((els) => els.map((el) => el.getAttribute('data-task-id')))).sort()).toEqual([...ids].sort());
  const pickedId = (await picked.first().getAttribute('data-task-id'))!;
  await picked.first().click();
  await expect(page.locator('#details-pane')).toBeVisible();
  await expect(page.locator('.insights-pane')).toBeHidden();
  await expect(page).toHaveURL(new RegExp(`#task=${pickedId}`));
});
