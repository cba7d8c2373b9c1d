/**
 * A coding task's change: the worktree Backchannel made for it (`TaskSpec.worktree`) and what the
 * agent did there, as one diff against the base (docs/coding-agents.md). Plain JSON, shared by the
 * core, the bridge and every front-end.
 */

/** What a task asks for in `TaskSpec.worktree` (`true` is `{}`). */
export interface WorktreeRequest {
  /** The commit the worktree starts from: a branch, tag or commit. @default HEAD of the repository containing `cwd` */
  base?: string;
  /**
   * Start from the checkout as it is, uncommitted and untracked (not ignored) files included, instead
   * of from a commit (the checkout itself is not touched). Cannot be used with `base`. @default false
   */
  includeUncommitted?: boolean;
  /** Continue in the worktree of this earlier task (a follow-up), instead of making a new one. */
  reuse?: string;
}

/** The worktree of a task, known from the moment it exists. */
export interface WorktreeInfo {
  /** The user's repository (its top-level directory). */
  repo: string;
  /** The base as asked for (`HEAD`, a branch, a tag, a commit). */
  base: string;
  /** The commit it resolved to. */
  baseSha: string;
  /** The branch Backchannel made, `backchannel/<short id>`. */
  branch: string;
  /** The worktree's directory (private, under Backchannel's data directory). */
  worktree: string;
}

export type ChangedFileStatus = 'added' | 'modified' | 'deleted' | 'type-changed';

export interface ChangedFile {
  path: string;
  status: ChangedFileStatus;
  /** Lines added; 0 for a binary file. */
  insertions: number;
  deletions: number;
  binary?: boolean;
}

/** What the agent changed, against the base: its commits plus its uncommitted and untracked files. */
export interface ChangeSummary extends WorktreeInfo {
  commits: Array<{ sha: string; subject: string }>;
  files: ChangedFile[];
  insertions: number;
  deletions: number;
}

/** Where a task's change stands in its lifecycle. */
export type ChangeState = 'working' | 'ready' | 'applied' | 'kept' | 'discarded';

/** One worktree Backchannel made, as its registry lists it (`backchannel worktrees`). */
export interface WorktreeRecord extends WorktreeInfo {
  taskId: string;
  /** The directory under the data directory that holds the worktree, the diff and this record. */
  dir: string;
  /** The task's working directory inside the worktree (cwd mapped to the same relative subdirectory). */
  cwd: string;
  label?: string;
  createdAt: string;
  state: ChangeState;
  /** Set once the agent ended. */
  change?: ChangeSummary;
  /** The agent's own session as the thread's last task reported it (`meta.session_id`): a follow-up resumes it. */
  session?: string;
  /** Later tasks that continued in this worktree (follow-ups), oldest first. */
  followUps?: string[];
}

/** A task's change with its whole diff (`taskChange` on the bridge). */
export interface TaskChange {
  record: WorktreeRecord;
  /** The unified diff (`git diff --binary`) against the base; empty when nothing changed. */
  diff: string;
}

/**
 * What `applyChanges` did: every change applied, in order, or none (the tree unchanged) and the
 * first that did not apply with the files that conflict. Fields for programs, `message` for people.
 */
export type ApplyOutcome =
  | { ok: true; applied: string[]; files: string[] }
  | { ok: false; applied: []; conflict: { taskId: string; files: string[] }; message: string };

/** The label for a change's size: "3 files, +12 −4". */
export function describeChange(change: Pick<ChangeSummary, 'files' | 'insertions' | 'deletions'>): string {
  const files = change.files.length;
  return `${files} file${files === 1 ? '' : 's'}, +${change.insertions} −${change.deletions}`;
}
