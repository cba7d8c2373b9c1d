/**
 * A repository is input (an MCP client picks the directory; an agent writes its worktree's files):
 * making a worktree, capturing its change, keeping its branch and applying it run no program the
 * repository names — filters, diff drivers, hooks, fsmonitor, signing — and a `.git` the agent
 * rewrites sends none of those git runs into the user's repository or a fake git directory.
 * Each mechanism is shown to fire under plain git first (the same marker), so a pass means something.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskBroker } from '../../../src/broker/index.js';
import { createTestBroker, fixture, tempDir } from '../../helpers/core.js';
import { checkoutHash, gitIn, makeRepo, writeFiles } from '../../helpers/git-repo.js';

type Edit = { path: string; content?: string; append?: string; delete?: boolean };

function brokerWithWorktrees() {
  return createTestBroker({ worktreeDir: path.join(tempDir('bc-wt-'), 'worktrees') });
}

async function coded(broker: TaskBroker, repo: string, edits: Edit[]) {
  const handle = broker.submit({ command: fixture('coder.mjs'), cwd: repo, worktree: true, input: { edits } as never });
  await handle.result;
  await handle.finished;
  return handle.id;
}

/** A shell command line that leaves `marker` behind and passes its input through (a filter's contract). */
function marking(marker: string): string {
  return `touch '${marker}'; cat`;
}

/** A script that leaves `marker` behind and exits 0 at once, reading nothing (a hook, a driver, an fsmonitor). */
function markingScript(dir: string, marker: string): string {
  const script = path.join(dir, `run-${path.basename(marker)}.sh`);
  writeFileSync(script, `#!/bin/sh\ntouch '${marker}'\nexit 0\n`);
  chmodSync(script, 0o755);
  return script;
}

/** Plain git (what the worktree code ran before), to show the mechanism fires; bounded, its failure ignored. */
function plainGit(cwd: string, ...args: string[]): void {
  try {
    execFileSync('git', args, { cwd, env: { ...process.env, ...IDENTITY }, stdio: 'ignore', timeout: 30_000 });
  } catch {
    // The marker is what is looked at.
  }
}

const IDENTITY = { GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@test', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@test' };

describe('a crafted repository runs nothing', () => {
  test('a smudge filter in the repository config does not run when the worktree is made', async () => {
    const markers = tempDir('bc-markers-');
    const marker = path.join(markers, 'smudge');
    const repo = makeRepo({ '.gitattributes': '*.txt filter=pwn\n', 'a.txt': 'hello\n' });
    gitIn(repo, 'config', 'filter.pwn.smudge', marking(marker));
    gitIn(repo, 'config', 'filter.pwn.required', 'true');
    plainGit(repo, 'worktree', 'add', '-q', path.join(tempDir('bc-control-'), 'tree'));
    expect(existsSync(marker)).toBe(true);
    execFileSync('rm', ['-f', marker]);

    const { broker } = brokerWithWorktrees();
    const id = await coded(broker, repo, [{ path: 'b.md', content: 'b\n' }]);
    expect(existsSync(marker)).toBe(false);
    const record = broker.coding.worktrees!.find(id)!;
    expect(record.state).toBe('ready');
    // Checked out as stored (no filter), and the change recorded.
    expect(broker.get(id)!.change!.files.map((file) => file.path)).toEqual(['b.md']);
  });

  test('clean and process filters do not run when the change is captured or applied', async () => {
    const markers = tempDir('bc-markers-');
    const clean = path.join(markers, 'clean');
    const processMarker = path.join(markers, 'process');
    const repo = makeRepo({ '.gitattributes': '*.txt filter=pwn\n*.dat filter=proc\n', 'a.txt': 'hello\n' });
    gitIn(repo, 'config', 'filter.pwn.clean', marking(clean));
    gitIn(repo, 'config', 'filter.proc.process', markingScript(markers, processMarker));
    const control = tempDir('bc-control-');
    gitIn(control, 'init', '-q');
    writeFiles(control, { '.gitattributes': '*.txt filter=pwn\n*.dat filter=proc\n', 'x.txt': 'x\n', 'y.dat': 'y\n' });
    gitIn(control, 'config', 'filter.pwn.clean', marking(clean));
    gitIn(control, 'config', 'filter.proc.process', markingScript(markers, processMarker));
    plainGit(control, 'add', 'x.txt');
    plainGit(control, 'add', 'y.dat');
    expect([existsSync(clean), existsSync(processMarker)]).toEqual([true, true]);
    execFileSync('rm', ['-f', clean, processMarker]);

    const { broker } = brokerWithWorktrees();
    const id = await coded(broker, repo, [
      { path: 'a.txt', append: 'more\n' },
      { path: 'new.txt', content: 'new\n' },
      { path: 'data.dat', content: 'd\n' },
    ]);
    expect(broker.get(id)!.change!.files.map((file) => file.path)).toEqual(['a.txt', 'data.dat', 'new.txt']);
    expect(await broker.coding.apply([id])).toMatchObject({ ok: true });
    expect(readFileSync(path.join(repo, 'new.txt'), 'utf8')).toBe('new\n');
    expect([existsSync(clean), existsSync(processMarker)]).toEqual([false, false]);
  });

  test('a textconv or diff command, an fsmonitor, hooks and commit signing run nowhere (capture, keep branch)', async () => {
    const markers = tempDir('bc-markers-');
    const textconv = path.join(markers, 'textconv');
    const command = `${textconv}-command`;
    const fsmonitor = path.join(markers, 'fsmonitor');
    const hook = path.join(markers, 'hook');
    const gpg = path.join(markers, 'gpg');
    const repo = makeRepo({ '.gitattributes': '*.txt diff=pwn\n', 'a.txt': 'hello\n' });
    gitIn(repo, 'config', 'diff.pwn.textconv', markingScript(markers, textconv));
    gitIn(repo, 'config', 'diff.pwn.command', markingScript(markers, `${textconv}-command`));
    gitIn(repo, 'config', 'core.fsmonitor', markingScript(markers, fsmonitor));
    const hooks = path.join(markers, 'hooks');
    mkdirSync(hooks);
    for (const name of ['post-checkout', 'pre-commit', 'commit-msg', 'post-commit', 'post-index-change'])
      writeFileSync(path.join(hooks, name), readFileSync(markingScript(markers, hook)));
    for (const name of ['post-checkout', 'pre-commit', 'commit-msg', 'post-commit', 'post-index-change'])
      chmodSync(path.join(hooks, name), 0o755);
    gitIn(repo, 'config', 'core.hooksPath', hooks);
    gitIn(repo, 'config', 'commit.gpgSign', 'true');
    gitIn(repo, 'config', 'gpg.program', markingScript(markers, gpg));
    // Each fires under plain git.
    writeFileSync(path.join(repo, 'a.txt'), 'changed\n');
    plainGit(repo, 'diff', 'HEAD'); // the diff command
    plainGit(repo, 'diff', '--no-ext-diff', 'HEAD'); // the textconv
    plainGit(repo, 'commit', '-qam', 'signed');
    expect([textconv, command, fsmonitor, hook, gpg].map((marker) => existsSync(marker))).toEqual([true, true, true, true, true]);
    writeFileSync(path.join(repo, 'a.txt'), 'hello\n'); // not through git, which would run them again
    execFileSync('rm', ['-f', textconv, command, fsmonitor, hook, gpg]);

    const { broker } = brokerWithWorktrees();
    const id = await coded(broker, repo, [{ path: 'a.txt', append: 'more\n' }]);
    expect(broker.get(id)!.change!.files).toEqual([{ path: 'a.txt', status: 'modified', insertions: 1, deletions: 0 }]);
    const kept = await broker.coding.keepBranch(id);
    expect([textconv, command, fsmonitor, hook, gpg].map((marker) => existsSync(marker))).toEqual([false, false, false, false, false]);
    expect(gitIn(repo, 'show', `${kept.branch}:a.txt`)).toBe('hello\nmore\n');
  });
});

describe("an agent's own .git file", () => {
  test("pointing at the user's repository: capture and keep-branch stay in the worktree; the user's branch and index are untouched", async () => {
    const repo = makeRepo();
    const head = gitIn(repo, 'rev-parse', 'HEAD').trim();
    const before = checkoutHash(repo);
    const { broker } = brokerWithWorktrees();
    const id = await coded(broker, repo, [
      { path: 'agent.txt', content: 'work\n' },
      { path: '.git', content: `gitdir: ${path.join(repo, '.git')}\n` },
    ]);
    expect(broker.get(id)!.change!.files.map((file) => file.path)).toEqual(['agent.txt']);
    const kept = await broker.coding.keepBranch(id);
    expect(gitIn(repo, 'rev-parse', 'main').trim()).toBe(head);
    expect(checkoutHash(repo)).toBe(before);
    expect(gitIn(repo, 'show', `${kept.branch}:agent.txt`)).toBe('work\n');
  });

  test('pointing at a fake git directory with a filter: nothing runs, the real change is recorded', async () => {
    const markers = tempDir('bc-markers-');
    const marker = path.join(markers, 'fake-clean');
    const fake = path.join(tempDir('bc-fake-'), 'fake.git');
    gitIn(path.dirname(fake), 'init', '-q', '--bare', fake);
    gitIn(fake, 'config', 'core.bare', 'false');
    gitIn(fake, 'config', 'filter.pwn.clean', marking(marker));
    const repo = makeRepo();
    const { broker } = brokerWithWorktrees();
    const id = await coded(broker, repo, [
      { path: '.gitattributes', content: '* filter=pwn\n' },
      { path: 'agent.txt', content: 'work\n' },
      { path: '.git', content: `gitdir: ${fake}\n` },
    ]);
    expect(broker.get(id)!.change!.files.map((file) => file.path)).toEqual(['.gitattributes', 'agent.txt']);
    await broker.coding.keepBranch(id);
    expect(existsSync(marker)).toBe(false);
  });
});
