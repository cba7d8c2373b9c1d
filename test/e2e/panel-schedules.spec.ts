/**
 * The panel's Schedules view (issue 37) against the real `backchannel serve` (its scheduler, its run
 * policy, real sub-agent processes) in Debian's Chromium: a `--every 2s` schedule made from the form
 * fires, each fire in its history with a link that opens its task; paused, it records its fires as
 * skipped and runs none; Run now starts one anyway; Delete asks first; a command the run policy does
 * not allow from the `schedule` door shows the refusal in the form and stores nothing; a preset runs;
 * a name in use is replaced only when asked; a long history pages in older fires; the view opens by
 * key and address, and lays out without overlaps at 720 and 1100 px. Every wait is on a condition,
 * never on time.
 */
import { expect, test, type Locator, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { shortTaskId } from '../../src/model/task-ids.js';
import { ROOT, scratchDir, startServe, TICKER, type Serve } from './serve.js';

let dir: string;
let serve: Serve;

interface Fire {
  at: number;
  outcome: 'ran' | 'skipped' | 'buffered';
  taskId?: string;
  reason?: string;
  manual?: boolean;
  until?: number;
}

test.beforeAll(async () => {
  dir = scratchDir();
  // The run policy allows the ticker fixture (with any arguments) and nothing else: `sh` is refused.
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, `run_policy:\n  allow:\n    - { command: ${JSON.stringify(TICKER)}, more_args: true }\n`);
  serve = await startServe(path.join(dir, 'data'), [], { BACKCHANNEL_CONFIG: config });
});

test.afterAll(async () => {
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A schedule's fire records, newest first, as the hub keeps them. */
async function fires(name: string): Promise<Fire[]> {
  return (await serve.api<{ fires: Fire[] }>('POST', `/api/schedules/${name}/fires`, { limit: 500 })).fires;
}

async function openSchedules(page: Page): Promise<Locator> {
  await page.goto(serve.url);
  await page.getByRole('button', { name: 'Schedules' }).click();
  const view = page.locator('section.schedules');
  await expect(view).toBeVisible();
  await expect(page.locator('#schedules-toggle')).toHaveAttribute('aria-pressed', 'true');
  return view;
}

async function createSchedule(page: Page, name: string, every: string, command: string, args: string[]): Promise<Locator> {
  await page.locator('section.schedules .schedules-head').getByRole('button', { name: 'New schedule' }).click();
  const dialog = page.locator('#new-schedule-dialog');
  await expect(dialog).toBeVisible();
  await page.locator('#sched-name').fill(name);
  await page.locator('#sched-every').fill(every);
  await page.locator('#sched-command').fill(command);
  await page.locator('#sched-args').fill(args.join('\n'));
  await dialog.getByRole('button', { name: 'Create schedule' }).click();
  return dialog;
}

test('a schedule made in the form fires, links its runs, pauses, runs now and is deleted', async ({ page }) => {
  // Several waits of up to 30 s each for fires and runs: room for all of them on a busy machine.
  test.setTimeout(180_000);
  const view = await openSchedules(page);
  // Nothing scheduled yet: the empty state, with its own way to create one.
  await expect(view.locator('.schedules-empty')).toBeVisible();
  await expect(view.locator('.schedules-empty h2')).toHaveText('No schedules yet');

  const dialog = await createSchedule(page, 'tick', '2s', TICKER, ['1', '0.01']);
  await expect(dialog).toBeHidden();
  const row = view.locator('li.schedule[data-name="tick"]');
  await expect(row.locator('.schedule-cadence')).toHaveText('every 2s');
  await expect(row.locator('.schedule-command')).toHaveText(`${TICKER} 1 0.01`);
  await expect(row.locator('.schedule-next')).toContainText('Next fire');
  await expect(view.locator('.schedules-empty')).toBeHidden();

  // Fires appear in its history by themselves (events and the view's poll), each ran with its task's link.
  await row.getByRole('button', { name: 'History' }).click();
  await expect(row.getByRole('button', { name: 'History' })).toHaveAttribute('aria-expanded', 'true');
  const ran = row.locator('.fire[data-outcome="ran"]');
  await expect.poll(() => ran.count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
  await expect(row.locator('.schedule-last')).toContainText(/Last run .* · Succeeded/, { timeout: 30_000 });
  const recorded = await fires('tick');
  const firstRun = recorded.filter((f) => f.outcome === 'ran').at(-1)!;
  // The oldest fire shown (newest first) is the first run; its link opens that task in the panel.
  const link = ran.last().locator('.fire-task');
  await expect(link).toHaveAttribute('data-task-id', firstRun.taskId!);
  // Each link names its task by its short id (random: runs a second apart share the start of their ids).
  await expect(link).toHaveText(`task ${shortTaskId(firstRun.taskId!)}`);
  await link.click();
  await expect(page).toHaveURL(new RegExp(`#task=${firstRun.taskId}$`));
  await expect(page.locator('#details-pane')).toBeVisible();
  await expect(page.locator('#details-pane .details-title')).toHaveText('schedule tick');
  await expect(page.locator('#details-pane .badge').first()).toHaveText('Succeeded', { timeout: 30_000 });
  await expect(page.locator('section.schedules')).toBeHidden();

  // Back to the view: the row and its open history are as they were.
  await page.getByRole('button', { name: 'Schedules' }).click();
  await expect(row.locator('.fire-list')).toBeVisible();

  // Paused: no run starts; the fire times that pass are recorded as skipped, `paused`.
  await row.getByRole('button', { name: 'Pause' }).click();
  await expect(row.locator('.badge-paused')).toBeVisible();
  await expect(row.locator('.schedule-next')).toHaveText('Next fire: paused');
  await expect(row.getByRole('button', { name: 'Resume' })).toHaveAttribute('aria-pressed', 'true');
  const pausedAt = Date.now();
  const ranBefore = (await fires('tick')).filter((f) => f.outcome === 'ran').length;
  // Two fire times pass while paused, recorded as skips (a run of skips is one record that its `until`
  // extends): the condition, not a sleep.
  await expect
    .poll(
      async () =>
        (await fires('tick')).filter((f) => f.outcome === 'skipped' && f.reason === 'paused' && (f.until ?? f.at) > pausedAt + 2000).length,
      {
        timeout: 30_000,
      },
    )
    .toBeGreaterThanOrEqual(1);
  expect((await fires('tick')).filter((f) => f.outcome === 'ran').length).toBe(ranBefore);
  const pausedSkip = row.locator('.fire[data-reason="paused"]').first();
  await expect(pausedSkip.locator('.fire-what')).toHaveText(/^skipped( ×\d+)?: the schedule was paused$/);
  await expect(pausedSkip.locator('.fire-task')).toHaveCount(0);
  await expect(ran).toHaveCount(ranBefore);

  // Run now starts one even while paused: recorded `manual`, with its task.
  await row.getByRole('button', { name: 'Run now' }).click();
  await expect(page.locator('#toast')).toHaveText('Started tick');
  await expect(ran).toHaveCount(ranBefore + 1);
  await expect(ran.first().locator('.fire-what')).toHaveText('ran (run now)');
  const manual = (await fires('tick')).find((f) => f.manual)!;
  await expect(ran.first().locator('.fire-task')).toHaveAttribute('data-task-id', manual.taskId!);
  await expect(row.locator('.badge-paused')).toBeVisible();
  fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
  await page.screenshot({ path: path.join(ROOT, 'test-results', 'schedules-history.png'), fullPage: true });

  // Delete asks first; Keep keeps it.
  await row.locator('.schedule-delete').click();
  const confirm = row.locator('.schedule-confirm');
  await expect(confirm).toBeVisible();
  await expect(confirm).toContainText('Delete schedule tick?');
  await confirm.getByRole('button', { name: 'Keep' }).click();
  await expect(confirm).toBeHidden();
  await row.locator('.schedule-delete').click();
  await confirm.getByRole('button', { name: 'Delete' }).click();
  await expect(row).toHaveCount(0);
  await expect(view.locator('.schedules-empty')).toBeVisible();
  expect(await serve.api<unknown[]>('GET', '/api/schedules')).toEqual([]);
});

test('a command the run policy does not allow from a schedule is refused in the form, and nothing is stored', async ({ page }) => {
  // From the keyboard (S), and by its address: a reload comes back to it.
  await page.goto(serve.url);
  await expect(page.locator('#app')).toHaveAttribute('data-ready', 'true');
  await page.keyboard.press('s');
  await expect(page.locator('section.schedules')).toBeVisible();
  await expect(page).toHaveURL(/#schedules$/);
  await page.reload();
  await expect(page.locator('section.schedules')).toBeVisible();
  await expect(page.locator('.list-pane')).toBeHidden();
  const mark = path.join(dir, 'pwned');
  const dialog = await createSchedule(page, 'sneaky', '5s', 'sh', ['-c', `touch ${mark}`]);
  const error = dialog.locator('.form-error');
  await expect(error).toContainText(`refused \`sh -c touch ${mark}\``);
  await expect(error).toContainText('from a schedule: not a template, a preset or a command the run policy allows');
  await expect(dialog).toBeVisible();
  // A typo in a duration is named before anything is sent.
  await page.locator('#sched-every').fill('5 parsecs');
  await dialog.getByRole('button', { name: 'Create schedule' }).click();
  await expect(error).toHaveText('Every: "5 parsecs" is not a duration such as 30s, 5m or 1h.');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  expect(await serve.api<unknown[]>('GET', '/api/schedules')).toEqual([]);
  expect(fs.existsSync(mark)).toBe(false);
});

test('a preset fills the form, runs from the schedule door, its run opens from the history, and a replace is asked first', async ({
  page,
}) => {
  // Several waits of up to 30 s each for fires and runs: room for all of them on a busy machine.
  test.setTimeout(180_000);
  const view = await openSchedules(page);
  await view.locator('.schedules-head').getByRole('button', { name: 'New schedule' }).click();
  const dialog = page.locator('#new-schedule-dialog');
  await page.locator('#sched-name').fill('hourly-progress');
  await page.locator('#sched-every').fill('1h');
  // The first preset (the progress demo agent), exactly as offered: the run policy allows it from every door.
  await page.locator('#sched-source').selectOption({ index: 1 });
  await expect(page.locator('#sched-args')).toHaveValue(/--mode=progress/);
  await dialog.getByRole('button', { name: 'Create schedule' }).click();
  await expect(dialog).toBeHidden();
  const row = view.locator('li.schedule[data-name="hourly-progress"]');
  await expect(row.locator('.schedule-cadence')).toHaveText('every 1h00m');
  await expect(row.locator('.schedule-last')).toHaveText('Not run yet');
  try {
    await row.getByRole('button', { name: 'Run now' }).click();
    await row.getByRole('button', { name: 'History' }).click();
    const link = row.locator('.fire[data-outcome="ran"] .fire-task');
    await expect(link).toHaveCount(1);
    // The row follows its run to the end (its task's events, and the poll, refresh the view).
    await expect(row.locator('.schedule-last')).toContainText('· Succeeded', { timeout: 60_000 });
    await link.click();
    await expect(page.locator('#details-pane .details-title')).toHaveText('schedule hourly-progress');
    await expect(page.locator('#details-pane .badge').first()).toHaveText('Succeeded');

    // The same name again: the form asks before it replaces the schedule.
    await page.getByRole('button', { name: 'Schedules' }).click();
    await view.locator('.schedules-head').getByRole('button', { name: 'New schedule' }).click();
    await page.locator('#sched-name').fill('hourly-progress');
    await page.locator('#sched-every').fill('2h');
    await page.locator('#sched-source').selectOption({ index: 1 });
    await dialog.getByRole('button', { name: 'Create schedule' }).click();
    await expect(dialog.locator('.form-error')).toHaveText(
      'A schedule named hourly-progress exists: Replace schedule replaces it (its fire history stays).',
    );
    await expect(row.locator('.schedule-cadence')).toHaveText('every 1h00m');
    await dialog.getByRole('button', { name: 'Replace schedule' }).click();
    await expect(dialog).toBeHidden();
    await expect(row.locator('.schedule-cadence')).toHaveText('every 2h00m');
  } finally {
    await serve.api('POST', '/api/schedules/hourly-progress/remove');
  }
});

test('a long history shows its newest fires, older ones on request, and each outcome in words', async ({ page }) => {
  test.setTimeout(180_000);
  // A hub whose data directory already holds a schedule for 29 February and 120 fire records, as the store writes them.
  const own = scratchDir();
  const dataDir = path.join(own, 'data');
  fs.mkdirSync(path.join(dataDir, 'schedules'), { recursive: true, mode: 0o700 });
  const start = Date.now() - 3 * 3_600_000;
  const schedule = { name: 'leap-day', cron: '0 0 29 2 *', tz: 'UTC', command: [TICKER, '1', '0.01'], overlap: 'skip', catchUp: 'none' };
  fs.writeFileSync(
    path.join(dataDir, 'schedules', 'schedules.json'),
    JSON.stringify({ version: 1, schedules: [{ ...schedule, catchUpWindowMs: 604_800_000, paused: false, createdAt: start }] }),
    { mode: 0o600 },
  );
  const taskId = (i: number): string => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`;
  const records = Array.from({ length: 120 }, (_, i) => {
    const base = { schedule: 'leap-day', at: start + i * 60_000, recordedAt: start + i * 60_000 };
    if (i === 0) return { ...base, outcome: 'skipped', reason: 'hub_down', until: base.at + 29_000, count: 30 };
    if (i === 1) return { ...base, outcome: 'ran', taskId: taskId(i), catchUp: true };
    if (i % 10 === 5) return { ...base, outcome: 'skipped', reason: 'overlap' };
    return { ...base, outcome: 'ran', taskId: taskId(i) };
  });
  fs.writeFileSync(path.join(dataDir, 'schedules', 'fires.jsonl'), records.map((r) => JSON.stringify(r) + '\n').join(''), {
    mode: 0o600,
  });
  const config = path.join(own, 'config.yaml');
  fs.writeFileSync(config, `run_policy:\n  allow:\n    - { command: ${JSON.stringify(TICKER)}, more_args: true }\n`);
  const hub = await startServe(dataDir, [], { BACKCHANNEL_CONFIG: config });
  try {
    await page.goto(hub.url);
    await page.getByRole('button', { name: 'Schedules' }).click();
    const row = page.locator('li.schedule[data-name="leap-day"]');
    await expect(row.locator('.schedule-cadence')).toHaveText('cron 0 0 29 2 * (UTC)');
    await row.getByRole('button', { name: 'History' }).click();
    const history = row.locator('.schedule-history');
    await expect(history.locator('h3')).toHaveText('Fire history (newest 50 of 120)');
    await expect(history.locator('.fire')).toHaveCount(50);
    // Newest first: the newest record (a ran fire) leads, with its task's short id.
    await expect(history.locator('.fire').first().locator('.fire-task')).toHaveText(`task ${shortTaskId(taskId(119))}`);
    const more = history.getByRole('button', { name: 'Show older fires' });
    await more.click();
    await expect(history.locator('.fire')).toHaveCount(100);
    await expect(more).toBeFocused();
    await more.click();
    await expect(history.locator('.fire')).toHaveCount(120);
    await expect(history.locator('h3')).toHaveText('Fire history (120)');
    await expect(more).toBeHidden();
    // Every outcome in words; only a fire that ran links to a task.
    const hubDown = history.locator('.fire[data-reason="hub_down"]');
    await expect(hubDown.locator('.fire-what')).toHaveText('skipped ×30: the hub was down');
    await expect(hubDown.locator('.fire-time')).toContainText('…');
    await expect(history.locator('.fire[data-reason="overlap"]')).toHaveCount(12);
    await expect(history.locator('.fire[data-reason="overlap"] .fire-task')).toHaveCount(0);
    await expect(history.locator('.fire').last().locator('.fire-what')).toHaveText('skipped ×30: the hub was down');
    await expect(history.locator('.fire').nth(118).locator('.fire-what')).toHaveText('ran (catch-up)');
  } finally {
    await hub.stop();
    fs.rmSync(own, { recursive: true, force: true });
  }
});

/** Elements of the view that stick out of their box or of the pane, or header buttons that overlap. */
async function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const pane = document.getElementById('schedules-pane')!.getBoundingClientRect();
    for (const el of document.querySelectorAll<HTMLElement>('#schedules-pane .schedule, #schedules-pane .schedule *')) {
      if (el.offsetParent === null) continue;
      const box = el.getBoundingClientRect();
      if (box.right > pane.right + 0.5) problems.push(`${el.className || el.tagName} ends at ${box.right} > ${pane.right}`);
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible')
        problems.push(`${el.className || el.tagName} overflows (${el.scrollWidth} > ${el.clientWidth})`);
    }
    const buttons = [...document.querySelectorAll<HTMLElement>('.schedule-buttons button, .bar-buttons button:not([hidden])')];
    for (const [i, a] of buttons.entries())
      for (const b of buttons.slice(i + 1)) {
        const p = a.getBoundingClientRect();
        const q = b.getBoundingClientRect();
        if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom)
          problems.push(`${a.textContent} overlaps ${b.textContent}`);
      }
    return problems;
  });
}

const MARKUP = '<img src=x onerror="document.title=1">';

for (const width of [720, 1100]) {
  test(`the Schedules view and its form lay out without overlaps at ${width} px, markup shown as text`, async ({ page }) => {
    const name = `layout-${width}-a-rather-long-schedule-name-that-needs-room`;
    await serve.api('POST', '/api/schedules', {
      name,
      cron: '0 9 * * 1-5',
      tz: 'America/New_York',
      command: [TICKER, '1', '0.01', MARKUP],
      paused: true,
    });
    try {
      await page.setViewportSize({ width, height: 720 });
      const view = await openSchedules(page);
      const row = view.locator(`li.schedule[data-name="${name}"]`);
      await expect(row.locator('.schedule-cadence')).toHaveText('cron 0 9 * * 1-5 (America/New_York)');
      // A command's arguments are text, whatever they hold.
      await expect(row.locator('.schedule-command')).toHaveText(`${TICKER} 1 0.01 ${JSON.stringify(MARKUP)}`);
      await expect(row.locator('.schedule-command img')).toHaveCount(0);
      await row.getByRole('button', { name: 'History' }).click();
      await expect(row.locator('.schedule-history h3')).toHaveText('Fire history (0)');
      await row.locator('.schedule-delete').click();
      await expect(row.locator('.schedule-confirm')).toBeVisible();
      await expect.poll(() => layoutProblems(page)).toEqual([]);
      fs.mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
      await page.screenshot({ path: path.join(ROOT, 'test-results', `schedules-${width}.png`), fullPage: true });

      await view.locator('.schedules-head').getByRole('button', { name: 'New schedule' }).click();
      const dialog = page.locator('#new-schedule-dialog');
      await page.locator('#sched-kind-cron').check();
      await expect(page.locator('#sched-tz')).toBeVisible();
      await expect(page.locator('#sched-every')).toBeHidden();
      const box = (await dialog.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(width);
      const overflowing = await dialog.evaluate((el) =>
        [...el.querySelectorAll<HTMLElement>('input, select, textarea')]
          .filter((input) => input.offsetParent !== null && input.getBoundingClientRect().right > el.getBoundingClientRect().right)
          .map((input) => input.id),
      );
      expect(overflowing).toEqual([]);
      await page.screenshot({ path: path.join(ROOT, 'test-results', `schedules-form-${width}.png`) });
    } finally {
      await serve.api('POST', `/api/schedules/${name}/remove`);
    }
  });
}
