/**
 * Where a coding task's new worktree comes from, checked at submit (docs/coding-agents.md): the
 * repository containing its cwd and an existing base commit (or a commit of the checkout as it is,
 * uncommitted changes included), found with as few git calls as the answer needs. Refusals are one
 * line (BrokerError('invalid_option')).
 */
import { copyFileSync, existsSync, realpathSync, rmSync, statSync, utimesSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { WorktreeInfo, WorktreeRecord, WorktreeRequest } from '../../model/change.js';
import { BrokerError } from '../errors.js';
import { type DriverConfig, driverConfigSync, GitError, gitSync } from './git.js';

/**
 * For git commands that read refs, config and admin files but never a file's content (`rev-parse`,
 * `branch -D`, `worktree remove --force --force`, `worktree prune`): no driver could run, none to list.
 */
export const NO_CONTENT: DriverConfig = [];

/** Where a task's worktree comes from, checked at submit (before the task is registered). */
export interface WorktreePlan extends Omit<WorktreeInfo, 'branch' | 'worktree'> {
  /** cwd relative to the repository's top level ('' at the top). */
  subdir: string;
  /** A follow-up: the record whose worktree it continues in. */
  reuse?: WorktreeRecord;
}

/**
 * Where a new worktree for a task in `cwd` would come from (`request.reuse` aside): the repository
 * containing `cwd`, an existing base. Throws a BrokerError('invalid_option') with one line saying what
 * is wrong. Front-ends that promise worktrees check their configuration with it before any task
 * (the gateway's `worktree: true` models); the broker checks every submission with it again.
 */
export function planNewWorktree(cwd: string, request: Omit<WorktreeRequest, 'reuse'>): WorktreePlan {
  const refuse = (message: string): never => {
    throw new BrokerError('invalid_option', message);
  };
  if (request.base !== undefined && request.includeUncommitted) {
    refuse('`includeUncommitted` starts from the checkout as it is; it cannot be combined with a `base`');
  }
  const base = request.base ?? 'HEAD';
  if (base.startsWith('-') || base.trim() === '' || /[\0\n]/.test(base)) refuse(`base "${base}" is not a git revision`);
  if (!isDirectory(cwd)) refuse(`working directory ${cwd} does not exist`);
  const { top, sha } = topAndBase(cwd, request.includeUncommitted ? undefined : base, refuse);
  const repo = realpathSync(top);
  const subdir = path.relative(repo, realpathSync(cwd));
  if (request.includeUncommitted)
    return { repo, base: 'the checkout (with uncommitted changes)', baseSha: snapshotCheckout(repo, refuse), subdir };
  if (sha === undefined)
    return refuse(
      base === 'HEAD' ? `the repository ${repo} has no commit yet; a worktree starts from one` : `base "${base}" does not exist in ${repo}`,
    );
  return { repo, base, baseSha: sha, subdir };
}

/**
 * The top level of the repository containing `cwd` and, when `base` is given, the commit it names
 * (undefined when it names none): one `git rev-parse` for both (a revision means the same from any
 * directory of the repository once peeled to a commit). Refuses when `cwd` is in no repository.
 */
function topAndBase(cwd: string, base: string | undefined, refuse: (message: string) => never): { top: string; sha?: string } {
  const args = [
    'rev-parse',
    '--show-toplevel',
    ...(base === undefined ? [] : ['--verify', '--quiet', '--end-of-options', `${base}^{commit}`]),
  ];
  let out: string;
  try {
    out = gitSync(args, { cwd, drivers: NO_CONTENT });
  } catch (error) {
    // `--verify --quiet` exits 1 with nothing on stderr for a missing base; the top level is printed.
    const printed = error instanceof GitError && error.exitCode === 1 && error.stderr.trim() === '' ? error.stdout : undefined;
    if (printed === undefined || printed.split('\n', 1)[0] === '')
      return refuse(`${cwd} is not in a git repository; a worktree needs one (${(error as Error).message})`);
    return { top: printed.split('\n', 1)[0]! };
  }
  const [top = '', sha = ''] = out.split('\n');
  if (top === '') return refuse(`${cwd} is not in a git repository; a worktree needs one`);
  return base === undefined || sha === '' ? { top } : { top, sha };
}

/** A commit of the checkout as it is (tracked changes and untracked files), made without touching its index. */
function snapshotCheckout(repo: string, refuse: (message: string) => never): string {
  const gitDir = gitSync(['rev-parse', '--absolute-git-dir'], { cwd: repo, drivers: NO_CONTENT }).trim();
  const temp = path.join(gitDir, `backchannel-snapshot-${randomBytes(6).toString('hex')}`);
  const drivers = driverConfigSync(repo);
  const env = { GIT_INDEX_FILE: temp };
  try {
    let head: string | undefined;
    try {
      head = gitSync(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: repo, drivers }).trim();
    } catch {
      head = undefined;
    }
    copyIndex(gitDir, temp);
    const unmerged = gitSync(['ls-files', '--unmerged', '-z'], { cwd: repo, env, drivers });
    if (unmerged !== '') refuse(`the checkout ${repo} has unresolved merge conflicts; resolve them before starting from it`);
    gitSync(['add', '-A', '--', '.'], { cwd: repo, env, drivers });
    const tree = gitSync(['write-tree'], { cwd: repo, env, drivers }).trim();
    const parents = head ? ['-p', head] : [];
    return gitSync(['commit-tree', tree, ...parents, '-m', 'backchannel: the checkout with its uncommitted changes'], {
      cwd: repo,
      env: BACKCHANNEL_IDENTITY,
      drivers,
    }).trim();
  } finally {
    rmSync(temp, { force: true });
    rmSync(`${temp}.lock`, { force: true });
  }
}

/** Who the commits Backchannel makes itself are by (a snapshot of the checkout, a kept branch's leftovers). */
export const BACKCHANNEL_IDENTITY = {
  GIT_AUTHOR_NAME: 'Backchannel',
  GIT_AUTHOR_EMAIL: 'backchannel@localhost',
  GIT_COMMITTER_NAME: 'Backchannel',
  GIT_COMMITTER_EMAIL: 'backchannel@localhost',
};

/**
 * Copies the index of `gitDir` to `to` (false when it has none), with its modification time: git
 * trusts an entry's cached stat unless the entry is as new as the index file ("racy git"), so a copy
 * stamped now would hide a file rewritten at the same size within the index's second.
 */
export function copyIndex(gitDir: string, to: string): boolean {
  const own = path.join(gitDir, 'index');
  if (!existsSync(own)) return false;
  copyFileSync(own, to);
  const { atime, mtime } = statSync(own);
  utimesSync(to, atime, mtime);
  return true;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
