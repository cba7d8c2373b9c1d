/**
 * Coding tasks in worktrees of their own (docs/coding-agents.md): made from a base of the repository
 * containing cwd, the agent run there, its change recorded as one diff with per-file figures, applied
 * all-or-nothing, discarded or swept — the user's checkout byte-identical until `apply`.
 */
import { existsSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskBroker } from '../../../src/broker/index.js';
import { createTestBroker, fixture, tempDir, waitFor } from '../../helpers/core.js';
import { checkoutHash, gitIn, lines, linkedWorktrees, makeRepo, ourBranches, writeFiles } from '../../helpers/git-repo.js';

type Edit = { path: string; content?: string; append?: string; delete?: boolean };

function coder(broker: TaskBroker, repo: string, edits: Edit[], extra: Record<string, unknown> = {}, worktree: object | boolean = true) {
  return broker.submit({ command: fixture('coder.mjs'), cwd: repo, worktree, input: { edits, ...extra } as never });
}

async function finished(handle: { result: Promise<unknown>; finished: Promise<void> }) {
  await handle.result;
  await handle.finished;
}

function brokerWithWorktrees(extra = {}) {
  const worktreeDir = path.join(tempDir('bc-wt-'), 'worktrees');
  return { ...createTestBroker({ worktreeDir, ...extra }), worktreeDir };
}

describe('a task in a worktree', () => {
  test('runs in a new worktree on its own branch; the change is recorded with per-file figures; the checkout is untouched', async () => {
    const repo = makeRepo();
    writeFiles(repo, { 'notes.txt': 'my own uncommitted work\n' });
    const before = checkoutHash(repo);
    const { broker, worktreeDir } = brokerWithWorktrees();
    const handle = coder(broker, repo, [
      { path: 'src/app.ts', append: 'export const added = 1;\n' },
      { path: 'src/new.ts', content: 'new file\n' },
      { path: 'README.md', delete: true },
    ]);
    const payload = (await handle.result) as { data: { cwd: string } };
    await handle.finished;
    const task = broker.get(handle.id)!;
    expect(payload.data.cwd.startsWith(worktreeDir)).toBe(true);
    expect(task.worktree?.branch).toMatch(/^backchannel\/[0-9a-f]{12}$/);
    expect(task.change).toMatchObject({
      repo,
      base: 'HEAD',
      baseSha: gitIn(repo, 'rev-parse', 'HEAD').trim(),
      insertions: 2,
      deletions: 1,
      commits: [],
    });
    expect(task.change!.files).toEqual([
      { path: 'README.md', status: 'deleted', insertions: 0, deletions: 1 },
      { path: 'src/app.ts', status: 'modified', insertions: 1, deletions: 0 },
      { path: 'src/new.ts', status: 'added', insertions: 1, deletions: 0 },
    ]);
    const { diff } = await broker.coding.change(handle.id);
    expect(diff).toContain('+export const added = 1;');
    expect(diff).toContain('deleted file mode');
    // The worktree's own index was not touched by the recording: the agent's edits are still unstaged there.
    expect(gitIn(task.worktree!.worktree, 'status', '--porcelain')).toContain(' M src/app.ts');
    expect(checkoutHash(repo)).toBe(before);
    // Its private directory: ours, 0700.
    expect(statSync(worktreeDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.dirname(task.worktree!.worktree)).mode & 0o777).toBe(0o700);
  });

  test("files rewritten at the same size within a second of the checkout are all in the change (git's racy-clean entries)", async () => {
    const text = (f: number, word: string) => Array.from({ length: 20 }, (_, i) => `export const v${f}_${i} = '${word}';\n`).join('');
    const files = Object.fromEntries(Array.from({ length: 30 }, (_, f) => [`src/f${f}.ts`, text(f, 'old')]));
    const repo = makeRepo(files);
    const { broker } = brokerWithWorktrees();
    // Several tasks: the agent's rewrite lands in the checkout's second on some of them, not on all.
    for (let n = 0; n < 10; n++) {
      const handle = coder(
        broker,
        repo,
        Object.keys(files).map((file, f) => ({ path: file, content: text(f, 'new') })),
      );
      await finished(handle);
      expect(broker.get(handle.id)!.change!.files).toHaveLength(30);
    }
  });

  test('the worktree and the change are in history: a broker started again on the data directory has them', async () => {
    const repo = makeRepo();
    const dataDir = path.join(tempDir('bc-wt-'), 'data');
    const first = createTestBroker({ dataDir }).broker;
    const handle = coder(first, repo, [{ path: 'src/app.ts', append: 'export const kept = 1;\n' }]);
    await finished(handle);
    const recorded = first.get(handle.id)!;
    await first.close();
    const again = createTestBroker({ dataDir }).broker;
    await again.ready;
    const restored = again.get(handle.id)!;
    expect(restored.worktree).toEqual(recorded.worktree);
    expect(restored.change).toEqual(recorded.change);
    expect((await again.coding.change(handle.id)).diff).toContain('+export const kept = 1;');
    await again.close();
  });

  test('maps cwd to the same subdirectory, and counts the agent’s commits and what it left uncommitted', async () => {
    const repo = makeRepo({ 'pkg/a/index.ts': lines(3), 'README.md': 'x\n' });
    const { broker } = brokerWithWorktrees();
    const handle = broker.submit({
      command: fixture('coder.mjs'),
      cwd: path.join(repo, 'pkg/a'),
      worktree: true,
      input: { edits: [{ path: 'index.ts', append: 'more\n' }], commit: 'add more', after: [{ path: 'later.ts', content: 'later\n' }] },
    });
    const payload = (await handle.result) as { data: { cwd: string } };
    await handle.finished;
    const change = broker.get(handle.id)!.change!;
    expect(payload.data.cwd).toBe(path.join(change.worktree, 'pkg/a'));
    expect(change.commits).toEqual([{ sha: expect.stringMatching(/^[0-9a-f]{40}$/), subject: 'add more' }]);
    expect(change.files.map((file) => file.path)).toEqual(['pkg/a/index.ts', 'pkg/a/later.ts']);
  });

  test('starts from another base when asked; a base that does not exist, a cwd outside git: one-line refusals', async () => {
    const repo = makeRepo();
    gitIn(repo, 'checkout', '-q', '-b', 'feature');
    writeFiles(repo, { 'feature.txt': 'f\n' });
    gitIn(repo, 'add', '-A');
    gitIn(repo, 'commit', '-q', '-m', 'feature');
    gitIn(repo, 'checkout', '-q', 'main');
    const { broker } = brokerWithWorktrees();
    const handle = coder(broker, repo, [{ path: 'x.txt', content: 'x\n' }], {}, { base: 'feature' });
    await finished(handle);
    const change = broker.get(handle.id)!.change!;
    expect(change.base).toBe('feature');
    expect(existsSync(path.join(change.worktree, 'feature.txt'))).toBe(true);
    expect(() => coder(broker, repo, [], {}, { base: 'no-such-branch' })).toThrow(/^base "no-such-branch" does not exist in /);
    expect(() => coder(broker, repo, [], {}, { base: '--upload-pack=evil' })).toThrow(/is not a git revision/);
    const plain = tempDir('bc-plain-');
    expect(() => coder(broker, plain, [])).toThrow(/is not in a git repository; a worktree needs one/);
    expect(() => coder(broker, repo, [], {}, { base: 'main', includeUncommitted: true })).toThrow(/cannot be combined with a `base`/);
    const empty = makeEmptyRepo();
    expect(() => coder(broker, empty, [])).toThrow(/has no commit yet/);
  });

  test('includeUncommitted starts from the checkout as it is, without touching it', async () => {
    const repo = makeRepo();
    writeFiles(repo, { 'src/app.ts': lines(20) + 'dirty\n', 'untracked.txt': 'u\n' });
    const before = checkoutHash(repo);
    const { broker } = brokerWithWorktrees();
    const handle = coder(broker, repo, [{ path: 'agent.txt', content: 'a\n' }], {}, { includeUncommitted: true });
    await finished(handle);
    const change = broker.get(handle.id)!.change!;
    expect(readFileSync(path.join(change.worktree, 'untracked.txt'), 'utf8')).toBe('u\n');
    expect(change.files.map((file) => file.path)).toEqual(['agent.txt']);
    expect(checkoutHash(repo)).toBe(before);
  });

  test('a broker without a place for worktrees refuses such a task', () => {
    const { broker } = createTestBroker();
    expect(() => broker.submit({ command: fixture('coder.mjs'), cwd: makeRepo(), worktree: true })).toThrow(/no directory for worktrees/);
  });
});

describe('a follow-up', () => {
  test('continues in the same worktree, linked to the first task, resuming its session; the change is the thread’s', async () => {
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const first = coder(broker, repo, [{ path: 'one.txt', content: '1\n' }]);
    const firstPayload = (await first.result) as { data: { cwd: string }; meta: { session_id: string } };
    await first.finished;
    const second = coder(broker, repo, [{ path: 'two.txt', content: '2\n' }], {}, { reuse: first.id });
    const payload = (await second.result) as { data: { cwd: string; resumed: string | null } };
    await second.finished;
    expect(payload.data.cwd).toBe(firstPayload.data.cwd);
    expect(payload.data.resumed).toBe(firstPayload.meta.session_id);
    const snapshot = broker.get(second.id)!;
    expect(snapshot.parent).toBe(first.id);
    expect(snapshot.change!.branch).toBe(broker.get(first.id)!.worktree!.branch);
    expect(snapshot.change!.files.map((file) => file.path)).toEqual(['one.txt', 'two.txt']);
    expect(broker.coding.list()).toMatchObject([{ taskId: first.id, followUps: [second.id], state: 'ready' }]);
    // The thread's change is one: either id names it.
    expect((await broker.coding.change(second.id)).diff).toBe((await broker.coding.change(first.id)).diff);
    await broker.coding.discard(second.id);
    expect(ourBranches(repo)).toEqual([]);
    expect(() => coder(broker, repo, [], {}, { reuse: first.id })).toThrow(/has no worktree to follow up in/);
  });

  test('a follow-up submitted the moment the first task ends (its change not yet recorded) waits for it, stays in the thread and resumes', async () => {
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const first = coder(broker, repo, [{ path: 'one.txt', content: '1\n' }]);
    // In the 'ended' event itself: the task has ended, its change is recorded only after its processes are gone.
    const second = new Promise<ReturnType<typeof coder>>((resolve) =>
      broker.on('update', (update) => {
        if (update.kind === 'ended' && update.taskId === first.id)
          resolve(coder(broker, repo, [{ path: 'two.txt', content: '2\n' }], { ask: 'More?' }, { reuse: first.id }));
      }),
    );
    const firstPayload = (await first.result) as { meta: { session_id: string } };
    const followUp = await second;
    // While the follow-up works (it waits for an answer), the thread names it and the first run's change is its own.
    const asking = await waitFor(() => broker.get(followUp.id)?.pendingQuestion, 'the follow-up to ask', 30_000);
    await first.finished;
    expect(broker.coding.list()).toMatchObject([{ taskId: first.id, followUps: [followUp.id], state: 'working' }]);
    expect(broker.get(first.id)!.change!.files.map((file) => file.path)).toEqual(['one.txt']);
    broker.answer(followUp.id, asking.askId, 'no');
    const payload = (await followUp.result) as { data: { resumed: string | null } };
    await followUp.finished;
    expect(payload.data.resumed).toBe(firstPayload.meta.session_id);
    expect(broker.get(followUp.id)!.change!.files.map((file) => file.path)).toEqual(['one.txt', 'two.txt']);
    expect(broker.coding.list()).toMatchObject([{ taskId: first.id, followUps: [followUp.id], state: 'ready' }]);
    await broker.coding.discard(first.id);
    expect(ourBranches(repo)).toEqual([]);
  });
});

describe('applying changes', () => {
  test('two applies at once that touch the same file: one applies, the other is a conflict outcome (never a raw git error)', async () => {
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const handles = Array.from({ length: 4 }, (_, i) => coder(broker, repo, [{ path: 'same.txt', content: `version ${i}\n` }]));
    await Promise.all(handles.map(finished));
    const outcomes = await Promise.all(handles.map((handle) => broker.coding.apply([handle.id])));
    expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => !o.ok))
      expect(outcome).toMatchObject({
        ok: false,
        applied: [],
        conflict: { files: ['same.txt'] },
        message: expect.stringMatching(/nothing was changed$/),
      });
    const winner = outcomes.findIndex((outcome) => outcome.ok);
    expect(readFileSync(path.join(repo, 'same.txt'), 'utf8')).toBe(`version ${winner}\n`);
  });

  test('three tasks on one repository: two apply in order, the third conflicts, nothing is half-applied', async () => {
    const repo = makeRepo({ 'a.txt': lines(10, 'a'), 'b.txt': lines(10, 'b') });
    const { broker } = brokerWithWorktrees();
    const one = coder(broker, repo, [{ path: 'a.txt', content: lines(10, 'a').replace('a 2\n', 'A2\n') }]);
    const two = coder(broker, repo, [
      { path: 'b.txt', content: lines(10, 'b').replace('b 9\n', 'B9\n') },
      { path: 'c.txt', content: 'c\n' },
    ]);
    const three = coder(broker, repo, [{ path: 'a.txt', content: lines(10, 'a').replace('a 2\n', 'other\n') }]);
    await Promise.all([one, two, three].map(finished));
    expect(new Set([one, two, three].map((h) => broker.get(h.id)!.worktree!.worktree)).size).toBe(3);
    const before = checkoutHash(repo);
    // All three in one go: the third conflicts with the first, so none is applied.
    const refused = await broker.coding.apply([one.id, two.id, three.id]);
    expect(refused).toMatchObject({ ok: false, applied: [], conflict: { taskId: three.id, files: ['a.txt'] } });
    expect(refused.ok === false && refused.message).toMatch(/does not apply cleanly .*\(a\.txt\); nothing was changed$/);
    expect(checkoutHash(repo)).toBe(before);
    const applied = await broker.coding.apply([one.id, two.id]);
    expect(applied).toEqual({ ok: true, applied: [one.id, two.id], files: ['a.txt', 'b.txt', 'c.txt'] });
    expect(readFileSync(path.join(repo, 'a.txt'), 'utf8')).toContain('A2\n');
    expect(readFileSync(path.join(repo, 'c.txt'), 'utf8')).toBe('c\n');
    // Applied to the working tree only: nothing staged, HEAD where it was.
    expect(gitIn(repo, 'diff', '--cached', '--name-only')).toBe('');
    expect(gitIn(repo, 'status', '--porcelain').split('\n').filter(Boolean).sort()).toEqual([' M a.txt', ' M b.txt', '?? c.txt']);
    const after = checkoutHash(repo);
    const again = await broker.coding.apply([three.id]);
    expect(again).toMatchObject({ ok: false, conflict: { taskId: three.id, files: ['a.txt'] } });
    expect(checkoutHash(repo)).toBe(after);
  });

  test('an untracked file of the user in the way is a conflict, named', async () => {
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const handle = coder(broker, repo, [{ path: 'new.txt', content: 'agent\n' }]);
    await finished(handle);
    writeFiles(repo, { 'new.txt': 'mine\n' });
    const before = checkoutHash(repo);
    expect(await broker.coding.apply([handle.id])).toMatchObject({ ok: false, conflict: { files: ['new.txt'] } });
    expect(checkoutHash(repo)).toBe(before);
  });
});

describe('discard, keep, sweep', () => {
  test('discard leaves no worktree, branch or directory; keep-branch keeps only the branch', async () => {
    const repo = makeRepo();
    const before = checkoutHash(repo);
    const { broker, worktreeDir } = brokerWithWorktrees();
    const gone = coder(broker, repo, [{ path: 'x.txt', content: 'x\n' }]);
    const kept = coder(broker, repo, [{ path: 'y.txt', content: 'y\n' }]);
    await Promise.all([gone, kept].map(finished));
    expect(ourBranches(repo)).toHaveLength(2);
    expect(
      broker.coding
        .list()
        .map((record) => record.taskId)
        .sort(),
    ).toEqual([gone.id, kept.id].sort());
    await broker.coding.discard(gone.id);
    const keptRecord = await broker.coding.keepBranch(kept.id);
    expect(ourBranches(repo)).toEqual([keptRecord.branch]);
    expect(linkedWorktrees(repo)).toEqual([]);
    expect(existsSync(keptRecord.worktree)).toBe(false);
    // The branch holds the whole change, what the agent left uncommitted included.
    expect(gitIn(repo, 'show', `${keptRecord.branch}:y.txt`)).toBe('y\n');
    expect(gitIn(repo, 'log', '-1', '--format=%s', keptRecord.branch)).toMatch(/^backchannel: the uncommitted changes of task /);
    // A kept change still applies (from its recorded diff) after its worktree is gone.
    expect(await broker.coding.apply([kept.id])).toMatchObject({ ok: true, files: ['y.txt'] });
    await broker.coding.discard(kept.id);
    expect(readdirSync(worktreeDir)).toEqual([]);
    expect(ourBranches(repo)).toEqual([keptRecord.branch]);
    expect(checkoutHash(repo)).not.toBe(before); // y.txt was applied
  });

  test('a sweep discards worktrees past the age, never a branch or a worktree it did not make', async () => {
    const repo = makeRepo();
    gitIn(repo, 'branch', 'backchannel/not-ours');
    const foreign = path.join(tempDir('bc-foreign-'), 'tree');
    gitIn(repo, 'worktree', 'add', '-q', foreign, '-b', 'mine');
    const { broker, worktreeDir } = brokerWithWorktrees();
    const handle = coder(broker, repo, [{ path: 'x.txt', content: 'x\n' }]);
    await finished(handle);
    // A planted entry that is a symlink to the user's repository is not ours: never followed.
    symlinkSync(repo, path.join(worktreeDir, 'abcdefabcdef'));
    expect(await broker.coding.worktrees!.sweep(60_000, () => false)).toEqual([]);
    expect(await broker.coding.worktrees!.sweep(0, (id) => id === handle.id)).toEqual([]);
    expect(await broker.coding.worktrees!.sweep(0, () => false)).toEqual([handle.id]);
    expect(ourBranches(repo)).toEqual(['backchannel/not-ours']);
    expect(linkedWorktrees(repo)).toEqual([foreign]);
    expect(existsSync(path.join(repo, 'README.md'))).toBe(true);
    expect(readdirSync(worktreeDir)).toEqual(['abcdefabcdef']);
  });

  test('discarding the worktree of a running task is refused', async () => {
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const handle = coder(broker, repo, [{ path: 'x.txt', content: 'x\n' }], { ask: 'go on?' });
    await waitFor(() => broker.get(handle.id)?.pendingQuestion !== undefined, 'the question');
    // The question names the branch and what the agent changed so far.
    expect(broker.get(handle.id)!.pendingQuestion!.worktree).toEqual({ branch: broker.get(handle.id)!.worktree!.branch, files: ['x.txt'] });
    await expect(broker.coding.discard(handle.id)).rejects.toThrow(`task ${handle.id} still works in that worktree`);
    await expect(broker.coding.keepBranch(handle.id)).rejects.toThrow(/still works in that worktree/);
    broker.answer(handle.id, 'q1', 'yes');
    await finished(handle);
    await broker.coding.discard(handle.id);
  });
});

function makeEmptyRepo(): string {
  const repo = path.join(tempDir('bc-empty-'), 'repo');
  gitIn(path.dirname(repo), 'init', '-q', repo);
  writeFileSync(path.join(repo, 'f'), 'f');
  return repo;
}
