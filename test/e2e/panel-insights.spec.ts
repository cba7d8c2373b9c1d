/**
 * Insights at the sizes people use, with history in one hour, one day and several days: the charts'
 * x-axis spans the chosen range (not uPlot's thousand days for a single point), the figures and
 * A/B tables fit the pane at 900, 1200 and 1400 px (nothing scrolls sideways, tokens/task shows),
 * and a duration reads the same in the panel as in `backchannel stats`. Screenshots in
 * test-results/insights-<history>-<width>.png.
 */
import { expect, test, type Page } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { writeJournal, type GeneratedTask } from '../insights/generate.js';
import { ROOT, scratchDir, startServe } from './serve.js';

const HOUR = 3_600_000;
const WIDTHS = [900, 1200, 1400];
const RANGES = { 'Last 24 hours': 24 * HOUR, 'Last 7 days': 7 * 24 * HOUR } as const;
/** A name as long as an agent's file can be: it must not push the figures out of the pane. */
const LONG_AGENT = 'summarise-the-whole-repository-with-its-history-and-open-pull-requests.mjs';

/** `count` tasks ending between `from` and `to` (ms), two agents, two models on one label, a few failures. */
function history(count: number, from: number, to: number): GeneratedTask[] {
  return Array.from({ length: count }, (_, i) => ({
    agent: i % 2 ? 'review.py' : LONG_AGENT,
    model: i % 3 ? 'gpt-a' : 'gpt-b',
    label: 'summarise',
    endedAt: new Date(from + ((to - from) * i) / count).toISOString(),
    durationMs: [6_500, 6_450, 12_340, 830, 71_000][i % 5]!,
    tokens: { input: 1_000_000 + i, output: 250_000 + i },
    ...(i % 7 === 3 ? { reason: 'timeout' as const } : i % 11 === 5 ? { reason: 'error' as const } : {}),
  }));
}

const now = Date.now();
const thisHour = Math.floor(now / HOUR) * HOUR;
const HISTORIES: Array<[string, GeneratedTask[]]> = [
  // Every task in the current hour (the reported case: the axis ran from 2027 to 2029).
  ['one-hour', history(40, thisHour, Math.min(now - 1000, thisHour + HOUR - 1000))],
  ['one-day', history(120, now - 20 * HOUR, now - 60_000)],
  ['several-days', history(300, now - 5 * 24 * HOUR, now - 60_000)],
];

/** `stats`' p50, p95 and p99 of the "all" row, as printed in the terminal. */
function statsDurations(dataDir: string): string[] {
  const out = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'backchannel.js'), 'stats', '--since', '7d', '--data-dir', dataDir], {
    encoding: 'utf8',
  });
  expect(out.status, out.stderr).toBe(0);
  const all = out.stdout.split('\n').find((line) => line.startsWith('all '));
  expect(all, out.stdout).toBeDefined();
  return all!.trim().split(/\s+/).slice(3, 6);
}

/** The figures tables that do not fit: wider than their section, or a last column past the pane's edge. */
async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const pane = document.getElementById('insights-pane')!.getBoundingClientRect();
    return [...document.querySelectorAll<HTMLElement>('.insights-tables section:has(table.figures)')].flatMap((section) => {
      const title = section.querySelector('h3')?.textContent;
      const last = section.querySelector('thead th:last-child')!.getBoundingClientRect();
      return [
        ...(section.scrollWidth > section.clientWidth ? [`${title}: ${section.scrollWidth} > ${section.clientWidth} px`] : []),
        ...(last.right > pane.right ? [`${title}: last column ends at ${last.right} > ${pane.right} px`] : []),
      ];
    });
  });
}

for (const [name, tasks] of HISTORIES) {
  test(`insights with history in ${name} fit 900-1400 px and chart the chosen range`, async ({ page }) => {
    test.setTimeout(120_000);
    const dir = scratchDir();
    const dataDir = path.join(dir, 'data');
    writeJournal(dataDir, tasks);
    const expected = statsDurations(dataDir);
    const serve = await startServe(dataDir);
    try {
      // Every insights answer comes late, as from a hub busy with its agents: a check must wait for the
      // range it chose to be drawn (aria-busy), not find the charts of the range before it (the
      // one-hour history has the same heatmap in both ranges, so nothing else tells them apart).
      await page.route('**/api/insights', async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        await route.continue();
      });
      await page.goto(serve.url);
      await page.getByRole('button', { name: 'Insights' }).click();
      const view = page.locator('.insights');
      const drawn = () => expect(view).toHaveAttribute('aria-busy', 'false');
      const hours = [...new Set(tasks.map((t) => Math.floor(Date.parse(t.endedAt) / HOUR) * HOUR))];
      for (const [range, span] of Object.entries(RANGES)) {
        await page.locator('select[name="range"]').selectOption({ label: range });
        await drawn();
        const inRange = hours.filter((hour) => hour + HOUR > Date.now() - span);
        await expect(view.locator('.insights-chart canvas')).toHaveCount(2);
        await expect(view.locator('.heatmap thead th')).toHaveCount(inRange.length + 1);
        for (const chart of await view.locator('.insights-chart').all()) {
          const from = Date.parse((await chart.getAttribute('data-x-from'))!);
          const to = Date.parse((await chart.getAttribute('data-x-to'))!);
          // The axis is the range asked for (from its first whole hour to now), every point inside it.
          expect(from).toBeGreaterThanOrEqual(now - span - HOUR);
          expect(to).toBeLessThanOrEqual(Date.now() + 1000);
          expect(to - from).toBeGreaterThan(span - HOUR);
          for (const hour of inRange) expect(hour >= from && hour <= to, new Date(hour).toISOString()).toBe(true);
        }
      }
      // The same durations as the terminal prints.
      const all = view.locator('.figures').first().locator('tr[data-key="all"] td');
      expect([await all.nth(2).textContent(), await all.nth(3).textContent(), await all.nth(4).textContent()]).toEqual(expected);

      fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 900 });
        await page.locator('select[name="range"]').selectOption({ label: 'Last 24 hours' });
        await page.locator('select[name="range"]').selectOption({ label: 'Last 7 days' });
        await drawn();
        await expect(view.locator('.figures').first().locator('thead th').last()).toHaveText('tokens/task');
        await expect.poll(() => overflowing(page)).toEqual([]);
        await page.screenshot({ path: path.join(ROOT, 'test-results', `insights-${name}-${width}.png`), fullPage: true });
      }
    } finally {
      await serve.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
