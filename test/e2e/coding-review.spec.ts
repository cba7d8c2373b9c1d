/**
 * Issue 26 items 3 and 4 in the panel: three fake coding agents (test/fixtures/coder.mjs) edit a real
 * git repository made here, each in its own worktree under a real hub (`backchannel serve`). The
 * details pane shows a task's diff file by file (collapsible); Apply brings it into the checkout;
 * a conflicting Apply names the files and leaves the checkout byte-identical; Discard removes the
 * worktree and the branch; two tasks marked in the list are reviewed together with their
 * overlapping hunks flagged and applied in the order picked (stopping at the conflict, nothing
 * changed); the New task form's "Run in a git worktree" sets the submission's worktree.
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

/** The lines of the base file, "line 1" … "line 20", with some of them replaced. */
function appTs(replace: Record<number, string> = {}): string {
  return Array.from({ length: 20 }, (_, i) => `${replace[i + 1] ?? `line ${i + 1}`}\n`).join('');
}

interface Snapshot {
  id: string;
  state: string;
  worktree?: { branch: string; worktree: string; base: string };
  change?: { files: unknown[] };
}

async function coding(label: string, edits: Array<{ path: string; content: string }>, repo: string): Promise<string> {
  const { id } = await serve!.api<{ id: string }>('POST', '/api/tasks', {
    command: CODER,
    cwd: repo,
    worktree: true,
    input: { edits },
    label,
  });
  return id;
}

const finishedWithChange = (id: string): Promise<Snapshot> => waitForChange<Snapshot>(serve!, id);

async function openTask(page: Page, label: string): Promise<void> {
  await page.locator('li.task', { hasText: label }).click();
  await expect(page.locator('#details-title')).toHaveText(label);
}

test('coding tasks: the diff file by file, Apply, a conflicting Apply, Discard, the combined review with overlaps flagged, and the worktree option', async ({
  page,
}) => {
  test.setTimeout(180_000);
  dir = scratchDir();
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'README.md'), '# demo\n');
  fs.writeFileSync(path.join(repo, 'src', 'app.ts'), appTs());
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  serve = await startServe(path.join(dir, 'data'));

  // A changes line 3 and adds a file; B changes line 4 (adjacent: an overlap, and a conflict once A
  // is in); C adds a note, to be discarded.
  const a = await coding(
    'Rename line three',
    [
      { path: 'src/app.ts', content: appTs({ 3: 'line three (A)' }) },
      { path: 'docs/a.md', content: '# A\n' },
    ],
    repo,
  );
  const b = await coding('Tweak line four', [{ path: 'src/app.ts', content: appTs({ 4: 'line four (B)' }) }], repo);
  const c = await coding('Add notes', [{ path: 'notes.txt', content: 'notes\n' }], repo);
  const table = Array.from({ length: 5000 }, (_, i) => `row ${i + 1}\n`).join('');
  const big = await coding('Generate the table', [{ path: 'table.ts', content: table }], repo);
  const plain = await serve.submit('progress', ['--steps=1', '--interval=10'], { label: 'Not a coding task' });
  const [, , taskC, taskBig] = await Promise.all([a, b, c, big].map(finishedWithChange));
  const pristine = checkoutHash(repo);

  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => /Content Security Policy/.test(message.text()) && errors.push(message.text()));
  await page.goto(serve.url);
  await expect(page.locator('li.task')).toHaveCount(5);

  // A task that runs in no worktree has no Change section (and no Apply/Discard).
  await openTask(page, 'Not a coding task');
  await expect(page.locator('.details .section.change')).toBeHidden();
  await expect(page.getByRole('button', { name: 'Apply', exact: true })).toHaveCount(0);
  expect(plain).toBeTruthy();

  // The diff of A: both files, each collapsible.
  await openTask(page, 'Rename line three');
  const change = page.locator('.details .section.change');
  await expect(change.locator('.change-facts')).toContainText('2 files, +2 −1');
  await expect(change.locator('.diff-file')).toHaveCount(2);
  const appFile = change.locator('.diff-file[data-path="src/app.ts"]');
  await expect(change.locator('.diff-file[data-path="docs/a.md"]')).toBeVisible();
  await expect(appFile.locator('.dl-add')).toHaveText('line three (A)');
  await expect(appFile.locator('.dl-del')).toHaveText('line 3');
  await appFile.locator('summary').click();
  await expect(appFile.locator('.dl-add')).toBeHidden();
  await appFile.locator('summary').press('Enter');
  await expect(appFile.locator('.dl-add')).toBeVisible();

  // Review A and B together: marked by checkbox and by Ctrl-click; the adjacent edits are flagged.
  await page.getByRole('checkbox', { name: 'Select Rename line three to review together' }).check();
  await expect(page.locator('.review-bar')).toContainText('1 selected');
  await page.locator('li.task', { hasText: 'Tweak line four' }).click({ modifiers: ['Control'] });
  await expect(page.locator('.review-bar')).toContainText('2 selected');
  await page.getByRole('button', { name: 'Review together' }).click();
  const review = page.locator('.review-pane');
  await expect(review.locator('.overlap')).toContainText('src/app.ts lines 3–4: Rename line three and Tweak line four');
  const flagged = review.locator('.diff-file.flagged[data-path="src/app.ts"]');
  await expect(flagged.locator('.diff-flag')).toHaveCount(2);
  await expect(flagged.locator('.diff-flag').first()).toContainText('Overlaps with Tweak line four');
  await expect(review.locator('.diff-file:not(.flagged)[data-path="docs/a.md"]')).toHaveCount(1);
  await page.screenshot({ path: path.join(ROOT, 'test-results', 'coding-review.png') });
  if (process.env.UPDATE_DOCS_SCREENSHOT === '1') await page.screenshot({ path: path.join(ROOT, 'docs', 'coding-review.png') });

  // Order B, A: B goes in, A then conflicts, so nothing is applied and the checkout is as it was.
  await review.getByRole('button', { name: 'Move Tweak line four up' }).click();
  await expect(review.locator('.review-task-label')).toHaveText(['Tweak line four', 'Rename line three']);
  await review.getByRole('button', { name: 'Apply 2 in this order' }).click();
  const combinedConflict = review.locator('.change-conflict');
  await expect(combinedConflict).toContainText('the change of Rename line three does not apply cleanly');
  await expect(combinedConflict.locator('.conflict-files')).toHaveText('src/app.ts');
  expect(checkoutHash(repo)).toBe(pristine);
  await review.getByRole('button', { name: 'Close the review' }).click();

  // Apply A alone: it is in the checkout.
  await openTask(page, 'Rename line three');
  await change.getByRole('button', { name: 'Apply', exact: true }).click();
  await expect(change.locator('.change-state')).toHaveText('Applied to your checkout.');
  await expect(change.getByRole('button', { name: 'Apply', exact: true })).toBeDisabled();
  expect(fs.readFileSync(path.join(repo, 'src', 'app.ts'), 'utf8')).toBe(appTs({ 3: 'line three (A)' }));
  expect(fs.readFileSync(path.join(repo, 'docs', 'a.md'), 'utf8')).toBe('# A\n');
  const withA = checkoutHash(repo);

  // B no longer applies: the files are named and the checkout is byte-identical.
  await openTask(page, 'Tweak line four');
  await change.getByRole('button', { name: 'Apply', exact: true }).click();
  await expect(change.locator('.change-conflict')).toContainText('does not apply cleanly to your checkout, and nothing was changed');
  await expect(change.locator('.conflict-files')).toHaveText('src/app.ts');
  expect(checkoutHash(repo)).toBe(withA);

  // Discard C: worktree and branch gone; the actions go with them.
  await openTask(page, 'Add notes');
  expect(git(repo, 'worktree', 'list')).toContain(taskC.worktree!.worktree);
  expect(git(repo, 'branch', '--list', taskC.worktree!.branch)).toContain(taskC.worktree!.branch);
  await change.getByRole('button', { name: 'Discard' }).click();
  await expect(change.locator('.change-state')).toHaveText('Discarded: its worktree and branch are gone.');
  await expect(change.locator('.change-buttons')).toBeHidden();
  expect(git(repo, 'worktree', 'list')).not.toContain(taskC.worktree!.worktree);
  expect(git(repo, 'branch', '--list', taskC.worktree!.branch)).toBe('');
  expect(fs.existsSync(taskC.worktree!.worktree)).toBe(false);
  expect(checkoutHash(repo)).toBe(withA);

  // A 5,000-line file: built 400 lines at a time. Keep branch: the worktree goes, the branch stays.
  await openTask(page, 'Generate the table');
  const tableFile = change.locator('.diff-file[data-path="table.ts"]');
  await expect(tableFile.locator('summary')).toContainText('+5000 −0');
  await expect(tableFile.locator('.dl')).toHaveCount(400);
  await tableFile.getByRole('button', { name: 'Show 400 more lines (4600 left)' }).click();
  await expect(tableFile.locator('.dl')).toHaveCount(800);
  await change.getByRole('button', { name: 'Keep branch' }).click();
  await expect(change.locator('.change-state')).toHaveText('Worktree removed, branch kept.');
  await expect(change.getByRole('button', { name: 'Keep branch' })).toBeDisabled();
  await expect(change.getByRole('button', { name: 'Apply', exact: true })).toBeEnabled();
  expect(git(repo, 'branch', '--list', taskBig.worktree!.branch)).toContain(taskBig.worktree!.branch);
  expect(git(repo, 'worktree', 'list')).not.toContain(taskBig.worktree!.worktree);
  expect(checkoutHash(repo)).toBe(withA);

  // New task: "Run in a git worktree" from a base sets the submission's worktree request.
  await page.getByRole('button', { name: 'New task' }).first().click();
  await page.locator('#new-source').selectOption('-1');
  await page.locator('#new-command').fill(CODER);
  await page.locator('#new-cwd').fill(repo);
  await page.locator('#new-label').fill('From the form');
  await expect(page.locator('#new-base')).toBeDisabled();
  await page.getByLabel('Run in a git worktree').check();
  await page.locator('#new-base').fill('main');
  await page.getByRole('button', { name: 'Start task' }).click();
  await expect(page.locator('#details-title')).toHaveText('From the form');
  const listed = await serve.api<Snapshot[]>('GET', '/api/tasks');
  const formed = await finishedWithChange(listed.find((task) => ![a, b, c, big, plain].includes(task.id))!.id);
  expect(formed.worktree!.base).toBe('main');
  await expect(change.locator('.change-facts')).toContainText(`branch ${formed.worktree!.branch} from main`);
  expect(errors).toEqual([]);
});

test('opened by its link (#task=<id>), a coding task’s change is asked for beside the task, not after it, and once', async ({ page }) => {
  test.setTimeout(90_000);
  const own = scratchDir();
  let hub: Serve | undefined;
  try {
    const repo = path.join(own, 'repo');
    fs.mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'app.ts'), appTs());
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'initial');
    hub = await startServe(path.join(own, 'data'));
    const { id } = await hub.api<{ id: string }>('POST', '/api/tasks', {
      command: CODER,
      cwd: repo,
      worktree: true,
      input: { edits: [{ path: 'app.ts', content: appTs({ 7: 'line seven (linked)' }) }] },
      label: 'Linked',
    });
    await waitForChange<Snapshot>(hub, id);
    const asked: string[] = [];
    page.on('request', (request) => asked.push(new URL(request.url()).pathname));
    // Which script sent each API request (boot.js sends the first paint's before panel.js has loaded).
    const sentBy = new Map<string, string[]>();
    const cdp = await page.context().newCDPSession(page);
    cdp.on('Network.requestWillBeSent', ({ request, initiator }) => {
      const { pathname } = new URL(request.url);
      if (!pathname.startsWith('/api/')) return;
      const script = initiator.stack?.callFrames[0]?.url ?? initiator.url ?? '';
      sentBy.set(pathname, [...(sentBy.get(pathname) ?? []), new URL(script || 'http://x/').pathname]);
    });
    await cdp.send('Network.enable');
    await page.goto(`${hub.url}#task=${encodeURIComponent(id)}`);
    await expect(page.locator('.change .dl-add')).toHaveText('line seven (linked)');
    // The two first pages, the change and the task: sent by boot.js, and each answer taken by the
    // panel (not asked for again); the task is asked for again for its log, by panel.js.
    expect(sentBy.get('/api/tasks/page')).toEqual(['/boot.js', '/boot.js']);
    expect(sentBy.get(`/api/tasks/${id}/change`)).toEqual(['/boot.js']);
    const [first, ...later] = sentBy.get(`/api/tasks/${id}`) ?? [];
    expect(first).toBe('/boot.js');
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((script) => script !== '/panel.js')).toEqual([]);
    const changeAt = asked.indexOf(`/api/tasks/${id}/change`);
    const taskAt = asked.indexOf(`/api/tasks/${id}`);
    // The panel knows nothing of the task when it starts: it asks for it, and for its change with it.
    expect(taskAt).toBeGreaterThanOrEqual(0);
    expect(changeAt).toBeGreaterThanOrEqual(0);
    expect(changeAt).toBeLessThan(taskAt);
    expect(asked.filter((name) => name === `/api/tasks/${id}/change`)).toHaveLength(1);
  } finally {
    await hub?.stop();
    fs.rmSync(own, { recursive: true, force: true });
  }
});
