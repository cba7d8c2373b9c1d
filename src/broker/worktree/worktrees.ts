/**
 * Coding tasks' worktrees (docs/coding-agents.md): made on request for a task, from a base commit of
 * the repository containing its cwd, in a private directory under the data directory (./store.ts);
 * the agent's change recorded as one diff against the base when it ends; applied into the user's
 * checkout all-or-nothing; discarded, kept as a branch, or swept by age.
 *
 * The user's checkout is never touched except by `apply`: its files, its index and its HEAD stay as
 * they are (git writes only objects, the worktree's metadata under .git/worktrees and our branch).
 * Every index Backchannel builds is a temporary one of its own (GIT_INDEX_FILE), never the user's.
 */
import { closeSync, existsSync, openSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type {
  ApplyOutcome,
  ChangedFile,
  ChangedFileStatus,
  ChangeSummary,
  TaskChange,
  WorktreeRecord,
  WorktreeRequest,
} from '../../model/change.js';
import { BrokerError } from '../errors.js';
import { driverConfig, driverConfigSync, git, GitError, gitSync, gitToFile } from './git.js';
import { shortIdOf, TREE_DIR, WorktreeStore } from './store.js';
import { BACKCHANNEL_IDENTITY, copyIndex, NO_CONTENT, planNewWorktree, type WorktreePlan } from './plan.js';

export { planNewWorktree, type WorktreePlan } from './plan.js';

export const BRANCH_PREFIX = 'backchannel/';
/**
 * A new worktree's checkout writes its files with one worker per core (`checkout.workers=0`; git's
 * own default is one): writing a 10,000-file tree is the kernel's work on each file, which a second
 * core halves (docs/performance.md). Command-line scope, like every other override here.
 */
const PARALLEL_CHECKOUT = ['-c', 'checkout.workers=0'];
/** A diff takes these so it applies whatever the user's diff settings are (noprefix, external diff, textconv). */
const DIFF_ARGS = ['--binary', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '--src-prefix=a/', '--dst-prefix=b/'];

/** The biggest diff `change` reads into memory (the panel, `diff`, MCP get_task_diff): 32 MB. */
export const MAX_DIFF_IN_MEMORY = 32 * 1024 * 1024;

export interface WorktreesOptions {
  /** The biggest diff `change` returns; a bigger one is refused with what to do instead. @default MAX_DIFF_IN_MEMORY */
  maxDiffInMemory?: number;
}

export class Worktrees {
  readonly store: WorktreeStore;
  private readonly maxDiffInMemory: number;
  /**
   * The last git worktree operation (worktree add, remove and prune, branch -D) queued on each
   * repository. Git writes a new worktree's admin directory (.git/worktrees/<name>) in steps, and
   * each of these commands reads them all: two at once on one repository failed ("failed to read
   * .git/worktrees/tree/commondir") or raced for the same name. So they run one at a time per repository.
   */
  private readonly repoQueues = new Map<string, Promise<unknown>>();

  constructor(root: string, options: WorktreesOptions = {}) {
    this.store = new WorktreeStore(root);
    this.maxDiffInMemory = options.maxDiffInMemory ?? MAX_DIFF_IN_MEMORY;
  }

  /**
   * Checks a task's request against its cwd: a git repository, an existing base. Throws a
   * BrokerError('invalid_option') with one line saying what is wrong. Synchronous (a few git calls
   * of milliseconds) so that a bad request is refused by `submit` itself.
   */
  plan(cwd: string, request: WorktreeRequest): WorktreePlan {
    const refuse = (message: string): never => {
      throw new BrokerError('invalid_option', message);
    };
    if (request.reuse !== undefined) {
      const record = this.find(request.reuse);
      if (!record) refuse(`task ${request.reuse} has no worktree to follow up in (not a coding task, or it was discarded)`);
      if (record!.state === 'discarded' || record!.state === 'kept' || !existsSync(record!.worktree)) {
        refuse(`the worktree of task ${request.reuse} is gone (${record!.state}); a follow-up needs it`);
      }
      const { repo, base, baseSha } = record!;
      return { repo, base, baseSha, subdir: path.relative(record!.worktree, record!.cwd), reuse: record };
    }
    return planNewWorktree(cwd, request);
  }

  /** Makes the worktree of task `taskId` on branch `backchannel/<short id>` and records it. */
  async create(taskId: string, plan: WorktreePlan, label: string): Promise<WorktreeRecord> {
    if (plan.reuse) return this.resume(taskId, plan.reuse);
    const short = shortIdOf(taskId);
    const dir = this.store.createEntry(short);
    const tree = path.join(dir, TREE_DIR);
    const branch = `${BRANCH_PREFIX}${short}`;
    try {
      const add = [...PARALLEL_CHECKOUT, 'worktree', 'add', '--quiet', '-b', branch, tree, plan.baseSha];
      await this.oneAtATime(plan.repo, () => git(add, { cwd: plan.repo }));
    } catch (error) {
      this.store.removeEntry(short);
      throw new Error(`could not create the worktree: ${(error as Error).message}`, { cause: error });
    }
    const cwd = path.join(tree, plan.subdir);
    mkdirSync(cwd, { recursive: true });
    const record: WorktreeRecord = {
      taskId,
      repo: plan.repo,
      base: plan.base,
      baseSha: plan.baseSha,
      branch,
      worktree: tree,
      dir,
      cwd,
      label,
      createdAt: new Date().toISOString(),
      state: 'working',
    };
    this.store.writeRecord(record);
    return record;
  }

  private resume(taskId: string, record: WorktreeRecord): WorktreeRecord {
    const next: WorktreeRecord = { ...record, state: 'working', followUps: [...(record.followUps ?? []), taskId] };
    this.store.writeRecord(next);
    return next;
  }

  /**
   * Records what the agent changed: commits, uncommitted and untracked files, as one diff against the
   * base (`change.diff` beside the record) with per-file figures. The worktree's own index is not
   * touched: a copy of it takes the `git add -A`.
   */
  async capture(record: WorktreeRecord, session?: string): Promise<ChangeSummary> {
    const cwd = record.worktree;
    const index = path.join(record.dir, `.index-${randomBytes(6).toString('hex')}`);
    try {
      const own = await treeEnv(record);
      const drivers = await driverConfig(cwd, own);
      const env = { ...own, GIT_INDEX_FILE: index };
      if (!copyIndex(own.GIT_DIR, index)) await git(['read-tree', 'HEAD'], { cwd, env, drivers });
      await git(['add', '-A', '--', '.'], { cwd, env, drivers });
      const tree = (await git(['write-tree'], { cwd, env, drivers })).trim();
      // The diff goes from git straight to its file: a change of any size never passes through memory.
      const diffFd = this.store.openNewDiff(path.basename(record.dir));
      const [, numstat, status, log] = await Promise.all([
        gitToFile(['diff', ...DIFF_ARGS, record.baseSha, tree], { cwd, env: own, drivers }, diffFd).finally(() => closeSync(diffFd)),
        git(['diff', '--numstat', '-z', '--no-renames', record.baseSha, tree], { cwd, env: own, drivers }),
        git(['diff', '--name-status', '-z', '--no-renames', record.baseSha, tree], { cwd, env: own, drivers }),
        git(['log', '--format=%H%x1f%s%x1e', `${record.baseSha}..HEAD`], { cwd, env: own, drivers }),
      ]);
      const files = changedFiles(numstat, status);
      const change: ChangeSummary = {
        repo: record.repo,
        base: record.base,
        baseSha: record.baseSha,
        branch: record.branch,
        worktree: record.worktree,
        commits: log
          .split('\x1e')
          .map((entry) => entry.trim())
          .filter(Boolean)
          .map((entry) => {
            const [sha = '', subject = ''] = entry.split('\x1f');
            return { sha, subject };
          }),
        files,
        insertions: files.reduce((sum, file) => sum + file.insertions, 0),
        deletions: files.reduce((sum, file) => sum + file.deletions, 0),
      };
      this.store.writeRecord({ ...record, state: 'ready', change, ...(session ? { session } : {}) });
      return change;
    } finally {
      rmSync(index, { force: true });
      rmSync(`${index}.lock`, { force: true });
    }
  }

  /**
   * The files the agent has changed so far against the base (committed, uncommitted and untracked):
   * what its question names. Synchronous (two git calls; a question is rare); empty when git fails.
   */
  changedSoFar(record: WorktreeRecord): string[] {
    try {
      const cwd = record.worktree;
      const env = treeEnvSync(record);
      const drivers = driverConfigSync(cwd, env);
      const tracked = gitSync(['diff', '--name-only', '-z', '--no-renames', record.baseSha], { cwd, env, drivers });
      const untracked = gitSync(['ls-files', '--others', '--exclude-standard', '-z'], { cwd, env, drivers });
      return [...new Set([...tracked.split('\0'), ...untracked.split('\0')].filter(Boolean))].sort();
    } catch {
      return [];
    }
  }

  /** The record of task `taskId` (the first task of a thread, or one of its follow-ups). */
  find(taskId: string): WorktreeRecord | undefined {
    return this.store.find(taskId) ?? this.store.list().find((record) => record.followUps?.includes(taskId));
  }

  list(): WorktreeRecord[] {
    return this.store.list();
  }

  /**
   * A task's change and its whole diff. A diff above `maxDiffInMemory` is refused with a one-line
   * BrokerError('worktree') saying its size and what to do instead (apply it, or read the file).
   */
  change(taskId: string): TaskChange {
    const record = this.require(taskId);
    const short = path.basename(record.dir);
    const found = this.store.diffFile(short);
    if (found && found.bytes > this.maxDiffInMemory) {
      throw new BrokerError(
        'worktree',
        `the diff of task ${taskId} is ${megabytes(found.bytes)}, more than the ${megabytes(this.maxDiffInMemory)} shown here; ` +
          `apply it with \`backchannel apply ${shortIdOf(taskId)}\`, or read it from ${found.file}`,
      );
    }
    return { record, diff: this.store.readDiff(short) ?? '' };
  }

  /**
   * Brings the changes of `taskIds`, in that order, into the user's working tree (the repository they
   * were made from): all of them, or — when one does not apply cleanly — none, the tree unchanged, and
   * the first that did not with its conflicting files. The checks run against a temporary index
   * holding the working tree as it is; the working tree is written once, by one `git apply` of the
   * combined change (git applies a patch whole or not at all).
   */
  async apply(taskIds: readonly string[]): Promise<ApplyOutcome> {
    if (taskIds.length === 0) throw new BrokerError('invalid_option', 'Expected at least one task whose change to apply');
    const records = taskIds.map((id) => this.require(id));
    const repo = records[0]!.repo;
    const other = records.find((record) => record.repo !== repo);
    if (other) throw new BrokerError('worktree', `task ${other.taskId} changed ${other.repo}, not ${repo}: apply them separately`);
    for (const record of records) {
      if (record.state === 'working')
        throw new BrokerError('worktree', `task ${record.taskId} is still working; apply its change once it ended`);
      if (!record.change) throw new BrokerError('worktree', `task ${record.taskId} has no recorded change`);
    }
    // One apply at a time per repository: two at once both checked against the same working tree,
    // and the second's write then failed with git's own text (a 500). Queued, the second is checked
    // against what the first wrote, and a conflict is reported as one.
    return this.oneAtATime(repo, () => this.applyNow(repo, records));
  }

  private async applyNow(repo: string, records: readonly WorktreeRecord[]): Promise<ApplyOutcome> {
    const index = path.join(this.store.root, `.apply-${randomBytes(6).toString('hex')}`);
    const combined = `${index}.diff`;
    const drivers = await driverConfig(repo);
    const env = { GIT_INDEX_FILE: index };
    try {
      const gitDir = (await git(['rev-parse', '--absolute-git-dir'], { cwd: repo, drivers })).trim();
      copyIndex(gitDir, index);
      await git(['add', '-A', '--', '.'], { cwd: repo, env, drivers });
      const before = (await git(['write-tree'], { cwd: repo, env, drivers })).trim();
      for (const record of records) {
        // git reads the diff from its file: never held in memory here, whatever its size.
        const found = this.store.diffFile(path.basename(record.dir));
        if (!found || found.bytes === 0) continue;
        try {
          await git(['apply', '--cached', '--binary', '--', found.file], { cwd: repo, env, drivers });
        } catch (error) {
          return refusedApply(
            error,
            record.taskId,
            (named) => `the change of task ${record.taskId} does not apply cleanly to ${repo} (${named})`,
          );
        }
      }
      const after = (await git(['write-tree'], { cwd: repo, env, drivers })).trim();
      const combinedFd = openSync(combined, 'wx', 0o600);
      await gitToFile(['diff', ...DIFF_ARGS, before, after], { cwd: repo, drivers }, combinedFd).finally(() => closeSync(combinedFd));
      const files = (await git(['diff', '--name-only', '-z', '--no-renames', before, after], { cwd: repo, drivers }))
        .split('\0')
        .filter(Boolean);
      if (statSync(combined).size > 0) {
        try {
          await git(['apply', '--binary', '--', combined], { cwd: repo, drivers });
        } catch (error) {
          // The user (or another program) changed the tree since the check: still all or nothing.
          return refusedApply(error, records[0]!.taskId, (named) => `the changes do not apply to ${repo} as it is now (${named})`);
        }
      }
      for (const record of records) this.store.writeRecord({ ...record, state: record.state === 'kept' ? 'kept' : 'applied' });
      return { ok: true, applied: records.map((record) => record.taskId), files };
    } finally {
      rmSync(combined, { force: true });
      rmSync(index, { force: true });
      rmSync(`${index}.lock`, { force: true });
    }
  }

  /**
   * Removes a task's worktree and its branch, then its entry (diff included). A kept branch is the
   * user's from then on: it stays (`git branch -D` removes it).
   */
  async discard(taskId: string): Promise<WorktreeRecord> {
    const record = this.require(taskId);
    await this.removeTree(record);
    if (record.state !== 'kept') await this.deleteBranch(record);
    this.store.removeEntry(path.basename(record.dir));
    return { ...record, state: 'discarded' };
  }

  /**
   * Removes a task's worktree and keeps its branch (and the diff, for `apply`). What the agent left
   * uncommitted is committed onto the branch first, so the branch holds the whole change.
   */
  async keepBranch(taskId: string): Promise<WorktreeRecord> {
    const record = this.require(taskId);
    if (existsSync(record.worktree)) await this.commitLeftovers(record);
    await this.removeTree(record);
    const kept: WorktreeRecord = { ...record, state: 'kept' };
    this.store.writeRecord(kept);
    return kept;
  }

  /**
   * Discards every worktree older than `maxAgeMs` that `inUse` does not name (a kept branch stays;
   * its entry goes). Returns the task ids swept. Only what the registry lists is looked at.
   */
  async sweep(maxAgeMs: number, inUse: (taskId: string) => boolean, now = Date.now()): Promise<string[]> {
    const swept: string[] = [];
    for (const record of this.list()) {
      if (now - Date.parse(record.createdAt) < maxAgeMs) continue;
      if ([record.taskId, ...(record.followUps ?? [])].some(inUse)) continue;
      try {
        await this.discard(record.taskId);
        swept.push(record.taskId);
      } catch {
        // Left for the next sweep (a repository on an unmounted disk, …).
      }
    }
    return swept;
  }

  private async commitLeftovers(record: WorktreeRecord): Promise<void> {
    const cwd = record.worktree;
    const env = await treeEnv(record);
    const drivers = await driverConfig(cwd, env);
    await git(['add', '-A', '--', '.'], { cwd, env, drivers });
    if ((await git(['diff', '--cached', '--name-only'], { cwd, env, drivers })) === '') return;
    const subject = `backchannel: the uncommitted changes of task ${record.taskId}`;
    await git(['commit', '--quiet', '--no-verify', '-m', subject], { cwd, env: { ...env, ...BACKCHANNEL_IDENTITY }, drivers });
  }

  /** Runs `operation` after the repository's previous worktree operation has ended (see repoQueues). */
  private oneAtATime<T>(repo: string, operation: () => Promise<T>): Promise<T> {
    const run = (this.repoQueues.get(repo) ?? Promise.resolve()).then(operation, operation);
    const settled = run.catch(() => undefined);
    this.repoQueues.set(repo, settled);
    void settled.then(() => this.repoQueues.get(repo) === settled && this.repoQueues.delete(repo));
    return run;
  }

  private require(taskId: string): WorktreeRecord {
    const record = this.find(taskId);
    if (!record) throw new BrokerError('unknown_task', `Task ${taskId} has no worktree (not a coding task, or it was discarded)`);
    return record;
  }

  private async removeTree(record: WorktreeRecord): Promise<void> {
    if (existsSync(record.repo)) {
      await this.oneAtATime(record.repo, async () => {
        const drivers = NO_CONTENT;
        await git(['worktree', 'remove', '--force', '--force', record.worktree], { cwd: record.repo, drivers }).catch(() => undefined);
        await git(['worktree', 'prune'], { cwd: record.repo, drivers }).catch(() => undefined);
      });
    }
    rmSync(record.worktree, { recursive: true, force: true });
  }

  private async deleteBranch(record: WorktreeRecord): Promise<void> {
    // Only a branch of ours: the name the record holds, with our prefix and the entry's own id.
    if (record.branch !== `${BRANCH_PREFIX}${path.basename(record.dir)}` || !existsSync(record.repo)) return;
    // `branch -D` reads every worktree's admin directory (is the branch checked out there?).
    await this.oneAtATime(record.repo, () => git(['branch', '-D', '--', record.branch], { cwd: record.repo, drivers: NO_CONTENT })).catch(
      (error: Error) => {
        if (!/not found/.test(error.message))
          throw new BrokerError('worktree', `could not delete branch ${record.branch}: ${error.message}`);
      },
    );
  }
}

/**
 * The environment that points git at a task's worktree and nothing else: its own admin directory
 * (`<repo's common dir>/worktrees/<name>`, the one whose `gitdir` file names this worktree) as
 * GIT_DIR, the worktree as GIT_WORK_TREE. The worktree's `.git` file is the agent's to write: one
 * saying `gitdir: <the user's repo>/.git`, or naming a fake git directory with a filter, would
 * otherwise send the capture's `add -A` and the kept branch's commit there. Found from the user's
 * repository, never from the worktree; a worktree git does not know is refused.
 */
async function treeEnv(record: WorktreeRecord): Promise<{ GIT_DIR: string; GIT_WORK_TREE: string }> {
  const common = (await git(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: record.repo, drivers: NO_CONTENT })).trim();
  return adminEnv(record, common);
}

function treeEnvSync(record: WorktreeRecord): { GIT_DIR: string; GIT_WORK_TREE: string } {
  return adminEnv(
    record,
    gitSync(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: record.repo, drivers: NO_CONTENT }).trim(),
  );
}

function adminEnv(record: WorktreeRecord, common: string): { GIT_DIR: string; GIT_WORK_TREE: string } {
  const wanted = new Set([path.join(record.worktree, '.git'), path.join(realOr(record.worktree), '.git')]);
  const admin = path.join(common, 'worktrees');
  let names: string[] = [];
  try {
    names = readdirSync(admin);
  } catch {
    // No linked worktrees at all: refused below.
  }
  for (const name of names) {
    let target: string;
    try {
      target = readFileSync(path.join(admin, name, 'gitdir'), 'utf8').trim();
    } catch {
      continue;
    }
    if (wanted.has(target)) return { GIT_DIR: path.join(admin, name), GIT_WORK_TREE: record.worktree };
  }
  throw new BrokerError('worktree', `${record.repo} has no worktree at ${record.worktree} any more (git worktree prune?)`);
}

function realOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

const STATUS: Record<string, ChangedFileStatus> = { A: 'added', M: 'modified', D: 'deleted', T: 'type-changed' };

/** Per-file figures from `--numstat -z` and `--name-status -z` (no renames: one path each). */

function changedFiles(numstat: string, nameStatus: string): ChangedFile[] {
  const statusOf = new Map<string, ChangedFileStatus>();
  const parts = nameStatus.split('\0');
  for (let i = 0; i + 1 < parts.length; i += 2) statusOf.set(parts[i + 1]!, STATUS[parts[i]!.charAt(0)] ?? 'modified');
  const files: ChangedFile[] = [];
  for (const entry of numstat.split('\0')) {
    const match = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(entry);
    if (!match) continue;
    const [, added, removed, file] = match as unknown as [string, string, string, string];
    const binary = added === '-';
    const changed: ChangedFile = {
      path: file,
      status: statusOf.get(file) ?? 'modified',
      insertions: binary ? 0 : Number(added),
      deletions: binary ? 0 : Number(removed),
    };
    if (binary) changed.binary = true;
    files.push(changed);
  }
  return files;
}

/** The files `git apply` names in its refusal ("error: patch failed: a.ts:3", "error: a.ts: patch does not apply", …). */
/** The outcome of an apply git refused: nothing changed, the conflicting files named (or git's reason). */
function refusedApply(error: unknown, taskId: string, say: (named: string) => string): ApplyOutcome {
  const files = conflictingFiles((error as GitError).stderr ?? '');
  const named = files.length > 0 ? files.join(', ') : (error as Error).message;
  return { ok: false, applied: [], conflict: { taskId, files }, message: `${say(named)}; nothing was changed` };
}

export function conflictingFiles(stderr: string): string[] {
  const files = new Set<string>();
  for (const line of stderr.split('\n')) {
    const match =
      /^error: patch failed: (.+):\d+$/.exec(line) ??
      /^error: (.+): (?:patch does not apply|already exists in (?:index|working directory)|does not exist in index|does not match index|No such file or directory)$/.exec(
        line,
      );
    if (match) files.add(match[1]!);
  }
  return [...files];
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}
