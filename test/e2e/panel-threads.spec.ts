/**
 * Issue 26 item 5 in the panel: a coding task and its follow-ups are one thread. A fake coding agent
 * (test/fixtures/coder.mjs) edits a real git repository made here under a real hub (`backchannel
 * serve`): the first run and two follow-ups (`worktree.reuse`, the seam `backchannel run
 * --follow-up` uses) show as one row — the newest run's status and the thread's whole change — with
 * "3 runs" to show the earlier runs nested under it (mouse and keyboard). The details pane lists
 * the runs in order; an earlier run points to the newest for the change; the newest run's Apply
 * brings the whole thread's change into the checkout. A follow-up started while the panel is open
 * becomes the thread's row at once (here it asks a question, answered from the panel), and one
 * started from the panel's Follow up (the New task dialog, in the thread's worktree) too.
 */
import { expect, test, type Page } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, waitForChange, type Serve } from './serve.js';
import { checkoutHash, gitIn as git } from '../helpers/git.js';

const CODER = path.join(ROOT, 'test', 'fixtures', 'coder.mjs');

let dir: string;
let serve: Serve | undefined;

test.afterAll(async () => {
  await serve?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Snapshot {
  id: string;
  state: string;
  parent?: string;
  worktree?: { branch: string; worktree: string };
  change?: { files: unknown[]; insertions: number; deletions: number };
}

type Edit = { path: string; content: string } | { path: string; append: string };

async function coding(label: string, input: { edits: Edit[]; ask?: string }, worktree: unknown): Promise<string> {
  const { id } = await serve!.api<{ id: string }>('POST', '/api/tasks', { command: CODER, cwd: repoDir(), worktree, input, label });
  return id;
}

const repoDir = () => path.join(dir, 'repo');

const finishedWithChange = (id: string): Promise<Snapshot> => waitForChange<Snapshot>(serve!, id);

const row = (page: Page, label: string) => page.locator('li.task', { has: page.locator('.task-label', { hasText: label }) });

test('a coding task and its follow-ups are one thread: one row with the newest run, the earlier ones nested, the runs in the details, the whole change applied', async ({
  page,
}) => {
  test.setTimeout(180_000);
  dir = scratchDir();
  const repo = repoDir();
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'src', 'app.ts'), 'export const app = 1;\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  serve = await startServe(path.join(dir, 'data'));

  // The first run, then two follow-ups in its worktree: each adds a line to the notes.
  const first = await coding('Start the notes', { edits: [{ path: 'notes.md', content: 'one\n' }] }, true);
  const firstTask = await finishedWithChange(first);
  const second = await coding(
    'Add a second line',
    {
      edits: [
        { path: 'notes.md', append: 'two\n' },
        { path: 'src/b.ts', content: 'export const b = 2;\n' },
      ],
    },
    { reuse: first },
  );
  const secondTask = await finishedWithChange(second);
  const third = await coding('Add a third line', { edits: [{ path: 'notes.md', append: 'three\n' }] }, { reuse: second });
  const thirdTask = await finishedWithChange(third);
  const other = await coding('Unrelated change', { edits: [{ path: 'other.txt', content: 'other\n' }] }, true);
  await finishedWithChange(other);
  // What the worktree code records: one worktree, each follow-up linked to the run before, and each
  // run's change against the thread's base, so the newest run's is the whole thread's.
  expect([secondTask.parent, thirdTask.parent]).toEqual([first, second]);
  expect(new Set([firstTask, secondTask, thirdTask].map((task) => task.worktree!.worktree)).size).toBe(1);
  expect([firstTask, secondTask, thirdTask].map((task) => [task.change!.files.length, task.change!.insertions])).toEqual([
    [1, 1],
    [2, 3],
    [2, 4],
  ]);
  const pristine = checkoutHash(repo);

  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => /Content Security Policy/.test(message.text()) && errors.push(message.text()));
  await page.goto(serve.url);

  // One row for the thread (its newest run), one for the other task; the earlier runs are hidden.
  await expect(page.locator('li.task')).toHaveCount(4);
  await expect(page.locator('li.task:visible .task-label')).toHaveText(['Unrelated change', 'Add a third line']);
  const head = row(page, 'Add a third line');
  await expect(head.locator('.badge')).toHaveText('Succeeded');
  await expect(head.locator('.task-change')).toHaveText('2 files, +4 −0');
  const toggle = head.locator('.thread-toggle');
  await expect(toggle).toHaveAccessibleName('Show the 2 earlier runs of Add a third line');
  await expect(toggle).toHaveText('3 runs');
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(row(page, 'Start the notes')).toBeHidden();
  await expect(row(page, 'Add a second line')).toBeHidden();

  // Expanded: the earlier runs under the thread's row, in order; their change is the thread's, on
  // the newest run, so they show no size and cannot be marked for a review of their own.
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(toggle).toHaveAccessibleName('Hide the 2 earlier runs of Add a third line');
  await expect(page.locator('li.task:visible .task-label')).toHaveText([
    'Unrelated change',
    'Add a third line',
    'Start the notes',
    'Add a second line',
  ]);
  await expect(page.locator('li.task.thread-run:visible .task-run')).toHaveText(['run 1 of 3', 'run 2 of 3']);
  await expect(row(page, 'Start the notes').locator('.task-change')).toHaveText('');
  await expect(row(page, 'Start the notes').locator('.task-mark')).toBeHidden();
  await expect(head.locator('.task-mark')).toBeVisible();

  // The details of the thread's row: the runs in order, and the whole change.
  await head.click();
  await expect(page.locator('#details-title')).toHaveText('Add a third line');
  const thread = page.locator('.details .section.thread');
  await expect(thread.locator('h3')).toHaveText('Thread: 3 runs in one worktree');
  await expect(thread.locator('.thread-run-open')).toHaveText(['Start the notes', 'Add a second line', 'Add a third line']);
  await expect(thread.locator('.thread-run-item.current .thread-run-number')).toHaveText('Run 3');
  const change = page.locator('.details .section.change');
  await expect(change.locator('.change-facts')).toContainText('2 files, +4 −0');
  await expect(change.locator('.change-facts')).toContainText('the whole change of 3 runs');
  await expect(change.locator('.diff-file[data-path="notes.md"] .dl-add')).toHaveText(['one', 'two', 'three']);
  await expect(change.locator('.diff-file[data-path="src/b.ts"]')).toBeVisible();
  await page.screenshot({ path: path.join(ROOT, 'test-results', 'panel-threads.png') });
  if (process.env.UPDATE_DOCS_SCREENSHOT === '1') await page.screenshot({ path: path.join(ROOT, 'docs', 'coding-thread.png') });

  // An earlier run: the same thread, and its Change section points to the newest run (no actions of its own).
  await thread.getByRole('button', { name: 'Open run 1: Start the notes' }).click();
  await expect(page.locator('#details-title')).toHaveText('Start the notes');
  await expect(thread.locator('.thread-run-item.current .thread-run-number')).toHaveText('Run 1');
  await expect(change.locator('.change-state')).toHaveText(
    'Continued by Add a third line: the change of the whole thread is on its newest run (run 3).',
  );
  await expect(change.locator('.change-buttons')).toBeHidden();
  await expect(change.locator('.diff-file')).toHaveCount(0);
  expect(checkoutHash(repo)).toBe(pristine);

  // The keyboard: ← on an earlier run goes to the thread's row, ← there hides the earlier runs, → shows them.
  await row(page, 'Start the notes').focus();
  await page.keyboard.press('ArrowLeft');
  await expect(head).toBeFocused();
  await page.keyboard.press('ArrowLeft');
  await expect(row(page, 'Start the notes')).toBeHidden();
  await page.keyboard.press('ArrowDown');
  await expect(head).toBeFocused(); // the last visible row: the hidden runs are skipped
  await page.keyboard.press('ArrowUp');
  await expect(row(page, 'Unrelated change')).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(head).toBeFocused();
  await page.keyboard.press('ArrowRight');
  await expect(row(page, 'Start the notes')).toBeVisible();
  await page.keyboard.press('ArrowDown');
  await expect(row(page, 'Start the notes')).toBeFocused();

  // Apply on the thread's row: the whole change (all three runs) goes into the checkout.
  await head.click();
  await change.getByRole('button', { name: 'Apply', exact: true }).click();
  await expect(change.locator('.change-state')).toHaveText('Applied to your checkout.');
  expect(fs.readFileSync(path.join(repo, 'notes.md'), 'utf8')).toBe('one\ntwo\nthree\n');
  expect(fs.readFileSync(path.join(repo, 'src', 'b.ts'), 'utf8')).toBe('export const b = 2;\n');

  // A follow-up started now is the thread's row at once: it asks, and is answered from the panel.
  const fourth = await coding(
    'Ask before the fourth line',
    { edits: [{ path: 'notes.md', append: 'four\n' }], ask: 'Commit too?' },
    { reuse: third },
  );
  const newHead = row(page, 'Ask before the fourth line');
  await expect(newHead.locator('.badge')).toHaveText('Needs answer');
  await expect(newHead.locator('.thread-toggle')).toHaveText('4 runs');
  await expect(page.locator('li.task.thread-run .task-run')).toHaveText(['run 1 of 4', 'run 2 of 4', 'run 3 of 4']);
  await expect(head.locator('.task-change')).toHaveText('');
  await newHead.click();
  await expect(thread.locator('.thread-run-open')).toHaveText([
    'Start the notes',
    'Add a second line',
    'Add a third line',
    'Ask before the fourth line',
  ]);
  await page.locator('.details .answer-input').fill('no');
  await page.locator('.details .answer-form').getByRole('button', { name: 'Answer' }).click();
  await expect(newHead.locator('.badge')).toHaveText('Succeeded');
  await expect(newHead.locator('.task-change')).toHaveText('2 files, +5 −0');
  await expect(change.locator('.diff-file[data-path="notes.md"] .dl-add')).toHaveText(['one', 'two', 'three', 'four']);
  expect((await finishedWithChange(fourth)).parent).toBe(third);

  // Follow up from the panel: the New task dialog with the run's command line, in its worktree.
  await change.getByRole('button', { name: 'Follow up' }).click();
  await expect(page.locator('#new-title')).toHaveText('Follow up Ask before the fourth line');
  await expect(page.locator('#new-command')).toHaveValue(CODER);
  await expect(page.getByLabel('Run in a git worktree')).toBeChecked();
  await expect(page.getByLabel('Run in a git worktree')).toBeDisabled();
  await expect(page.locator('#new-base')).toBeDisabled();
  await page.locator('#new-input').fill(JSON.stringify({ edits: [{ path: 'notes.md', append: 'five\n' }] }));
  await page.getByRole('button', { name: 'Start task' }).click();
  await expect(page.locator('#details-title')).toHaveText('Follow-up of Ask before the fourth line');
  const fromPanel = row(page, 'Follow-up of Ask before the fourth line');
  await expect(fromPanel.locator('.thread-toggle')).toHaveText('5 runs');
  await expect(fromPanel.locator('.task-change')).toHaveText('2 files, +6 −0');
  await expect(change.locator('.diff-file[data-path="notes.md"] .dl-add')).toHaveText(['one', 'two', 'three', 'four', 'five']);
  const listed = await serve.api<Snapshot[]>('GET', '/api/tasks');
  expect(listed.find((task) => task.parent === fourth)?.worktree?.worktree).toBe(firstTask.worktree!.worktree);
  // A new task from the same dialog is not a follow-up any more.
  await page.getByRole('button', { name: 'New task' }).first().click();
  await expect(page.locator('#new-title')).toHaveText('New task');
  await expect(page.getByLabel('Run in a git worktree')).toBeEnabled();
  await page.keyboard.press('Escape');
  expect(errors).toEqual([]);
});
