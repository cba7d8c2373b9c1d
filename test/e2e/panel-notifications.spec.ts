/**
 * The headless panel's browser notifications (src/renderer/notifications.ts, words from
 * src/model/notices.ts), with a notification spy in the page in place of `window.Notification`: the
 * bell asks permission from its click and remembers the choice; a task that asks a question notifies
 * "Needs an answer" and nothing says it succeeded while it waits; after the answer, one "Succeeded".
 */
import { expect, test, type Page } from '@playwright/test';
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

interface Shown {
  title: string;
  body?: string;
  tag?: string;
}

/** Replaces `window.Notification` with a recorder whose permission is `permission`; `requestPermission` answers `answer`. */
async function spyOnNotifications(
  page: Page,
  permission: NotificationPermission,
  answer: NotificationPermission = permission,
): Promise<void> {
  await page.addInitScript(
    ([permission, answer]) => {
      const spy = { shown: [] as Array<{ title: string; body?: string; tag?: string; click(): void }>, asked: 0 };
      class RecordingNotification {
        static permission = permission;
        static async requestPermission(): Promise<NotificationPermission> {
          spy.asked++;
          RecordingNotification.permission = answer;
          return answer;
        }
        onclick: (() => void) | null = null;
        constructor(title: string, options: NotificationOptions = {}) {
          spy.shown.push({ title, body: options.body, tag: options.tag, click: () => this.onclick?.() });
        }
        close(): void {}
      }
      Object.defineProperty(window, 'Notification', { value: RecordingNotification, configurable: true, writable: true });
      (window as unknown as { __notifySpy: typeof spy }).__notifySpy = spy;
    },
    [permission, answer] as const,
  );
}

const shown = (page: Page): Promise<Shown[]> =>
  page.evaluate(() =>
    (window as unknown as { __notifySpy: { shown: Shown[] } }).__notifySpy.shown.map(({ title, body, tag }) => ({ title, body, tag })),
  );
const asked = (page: Page): Promise<number> =>
  page.evaluate(() => (window as unknown as { __notifySpy: { asked: number } }).__notifySpy.asked);

test('a question notifies "Needs an answer" and no success while it waits; the answer, one "Succeeded"', async ({ page }) => {
  await spyOnNotifications(page, 'granted');
  await page.goto(serve.url);
  const bell = page.getByRole('button', { name: 'Notifications' });
  await expect(bell).toBeVisible();
  await expect(bell).toHaveAttribute('aria-pressed', 'false');
  await bell.click();
  await expect(bell).toHaveAttribute('aria-pressed', 'true');

  const id = await serve.submit('ask');
  await expect
    .poll(() => shown(page))
    .toEqual([{ title: 'Needs an answer: ask task', body: 'Which branch should I review?', tag: `${id}:needs_input` }]);
  // Waiting for the answer: the panel shows the question, and still nothing says the task is done.
  await expect(page.locator(`li.task[data-id="${id}"]`)).toHaveClass(/asking/);
  const { task } = await serve.api<{ task: { state: string; pendingQuestion: { askId: string } } }>('GET', `/api/tasks/${id}`);
  expect(task.state).toBe('running');
  expect(await shown(page)).toHaveLength(1);

  await serve.api('POST', `/api/tasks/${id}/answer`, { askId: task.pendingQuestion.askId, answer: 'dev' });
  await expect.poll(async () => (await shown(page)).map((n) => n.title)).toEqual(['Needs an answer: ask task', 'Succeeded: ask task']);
  // The exited update and later events tell nothing new: still exactly one ending.
  await expect.poll(async () => (await serve.api<{ task: { pid?: number } }>('GET', `/api/tasks/${id}`)).task.pid).toBeUndefined();
  expect((await shown(page)).filter((n) => /Succeeded|Done/.test(n.title))).toHaveLength(1);

  // Clicking the notification opens its task.
  await page.evaluate(() => (window as unknown as { __notifySpy: { shown: Array<{ click(): void }> } }).__notifySpy.shown[1]!.click());
  await expect(page).toHaveURL(new RegExp(`#task=${id}$`));
});

test('the choice is remembered; tasks that ended before the page opened are not news; off means silent', async ({ page }) => {
  await spyOnNotifications(page, 'granted');
  const before = await serve.submit('quick');
  await expect.poll(async () => (await serve.api<{ task: { state: string } }>('GET', `/api/tasks/${before}`)).task.state).toBe('succeeded');
  await page.goto(serve.url);
  await page.evaluate(() => localStorage.setItem('backchannel.notifications', 'on'));
  await page.reload();
  const bell = page.getByRole('button', { name: 'Notifications' });
  await expect(bell).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator(`li.task[data-id="${before}"]`)).toHaveClass(/state-succeeded/);
  expect(await shown(page)).toEqual([]);

  await bell.click();
  await expect(bell).toHaveAttribute('aria-pressed', 'false');
  expect(await page.evaluate(() => localStorage.getItem('backchannel.notifications'))).toBe('off');
  const quiet = await serve.submit('quick');
  await expect(page.locator(`li.task[data-id="${quiet}"]`)).toHaveClass(/state-succeeded/);
  expect(await shown(page)).toEqual([]);
  // Turned on again, only what happens next notifies (the quiet task's ending is not replayed).
  await bell.click();
  await expect(bell).toHaveAttribute('aria-pressed', 'true');
  const loud = await serve.submit('fail');
  await expect.poll(async () => (await shown(page)).map((n) => [n.title, n.tag])).toEqual([['Failed: fail task', `${loud}:ended`]]);
});

test('the bell asks the browser first; a refusal is said in a toast and nothing notifies', async ({ page }) => {
  await spyOnNotifications(page, 'default', 'denied');
  await page.goto(serve.url);
  const bell = page.getByRole('button', { name: 'Notifications' });
  expect(await asked(page)).toBe(0);
  await bell.click();
  await expect(page.locator('#toast')).toContainText('Notifications are blocked');
  expect(await asked(page)).toBe(1);
  await expect(bell).toHaveAttribute('aria-pressed', 'false');
  const id = await serve.submit('quick');
  await expect(page.locator(`li.task[data-id="${id}"]`)).toHaveClass(/state-succeeded/);
  expect(await shown(page)).toEqual([]);
});

test('the bell is an icon the panel ships, drawn without any emoji font', async ({ page }) => {
  await spyOnNotifications(page, 'default');
  await page.goto(serve.url);
  const bell = page.getByRole('button', { name: 'Notifications' });
  await expect(bell).toBeVisible();
  // No glyph that needs a font: the button's only content is the inline SVG, and it has a size.
  expect((await bell.innerText()).trim()).toBe('');
  const icon = bell.locator('svg path');
  await expect(icon).toHaveCount(1);
  const box = await icon.boundingBox();
  expect(box!.width).toBeGreaterThanOrEqual(10);
  expect(box!.height).toBeGreaterThanOrEqual(10);
});
