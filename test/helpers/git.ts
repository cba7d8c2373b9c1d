/**
 * Git for tests, without a test runner (the vitest suites and the Playwright specs both use it): run
 * git with a fixed identity, write files, and a fingerprint of a checkout to prove it untouched.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, lstatSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const IDENTITY = { GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@test', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@test' };

export function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...IDENTITY }, stdio: ['ignore', 'pipe', 'pipe'] });
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
}

/** `n` numbered lines: "line 1\n" … */
export function lines(n: number, prefix = 'line'): string {
  return Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join('');
}

/**
 * A hash of what the user sees of a checkout: every file of the working tree (names, modes, bytes),
 * the index and HEAD. Objects, refs and .git/worktrees are left out (git may add to them).
 */
export function checkoutHash(repo: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      const rel = path.relative(repo, file);
      if (rel === '.git') continue;
      const stat = lstatSync(file);
      hash.update(`${rel}\0${stat.mode}\0`);
      if (stat.isDirectory()) walk(file);
      else if (stat.isSymbolicLink()) hash.update(readlinkSync(file));
      else hash.update(readFileSync(file));
    }
  };
  walk(repo);
  hash.update(readFileSync(path.join(repo, '.git', 'HEAD')));
  try {
    hash.update(readFileSync(path.join(repo, '.git', 'index')));
  } catch {
    hash.update('no index');
  }
  return hash.digest('hex');
}

/** The branches of `repo` under `backchannel/`. */
export function ourBranches(repo: string): string[] {
  return gitIn(repo, 'branch', '--list', 'backchannel/*', '--format=%(refname:short)').split('\n').filter(Boolean);
}

/** The worktrees git knows for `repo`, besides the main one. */
export function linkedWorktrees(repo: string): string[] {
  return gitIn(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((line) => line.startsWith('worktree '))
    .map((line) => line.slice('worktree '.length))
    .slice(1);
}
