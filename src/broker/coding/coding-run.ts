/**
 * One coding task's run (a TaskRun, see ../task-kinds.ts): its worktree planned at submit, made
 * before the first attempt (journalled, shown on the task), its attempts run in it, its change
 * recorded once its processes are gone — before the exit is reported, so a caller that saw `exited`
 * finds the change. A capture that fails is logged on the task; the task's outcome stays its own.
 */
import { isoNow } from '../../protocol/index.js';
import type { PendingQuestion, TaskSpec } from '../../model/task.js';
import type { WorktreeRecord } from '../../model/change.js';
import type { Worktrees, WorktreePlan } from '../worktree/worktrees.js';
import type { KindContext, KindStep, TaskRun } from '../task-kinds.js';
import { sessionOf, threadOf } from './follow-up.js';

export class CodingRun implements TaskRun {
  /** The worktree once made (before the first attempt). */
  private record: WorktreeRecord | undefined;

  constructor(
    private readonly worktrees: Worktrees,
    private readonly plan: WorktreePlan,
    private readonly context: KindContext,
    /** A follow-up's spec, linked to its thread and resuming its session (./follow-up.ts). */
    readonly spec?: TaskSpec,
  ) {}

  /** A coding task runs in its worktree, in the subdirectory its cwd is in the repository. */
  get cwd(): string | undefined {
    return this.record?.cwd;
  }

  /** Makes (or, for a follow-up, takes over) the worktree; a failure fails the task before any attempt. */
  async prepare({ task, journal }: KindStep): Promise<void> {
    const record = await this.worktrees.create(task.id, await this.settledPlan(), task.label);
    this.record = record;
    const { repo, base, baseSha, branch, worktree: dir } = record;
    const info = { repo, base, baseSha, branch, worktree: dir };
    task.setWorktree(info);
    journal({ e: 'worktree', id: task.id, at: isoNow(), worktree: info });
    task.log('broker', `works in ${dir} on branch ${branch} (from ${base}, ${baseSha.slice(0, 8)})`);
  }

  /** Records the change (and the agent's session, for a follow-up) as one diff against the base. */
  async capture({ task, journal }: KindStep): Promise<void> {
    if (!this.record) return;
    try {
      const change = await this.worktrees.capture(this.record, sessionOf(task.final));
      task.setChange(change);
      journal({ e: 'worktree', id: task.id, at: isoNow(), change }, true);
    } catch (error) {
      task.log('broker', `the change could not be recorded: ${(error as Error).message}`);
    }
  }

  /** A coding task's question says where it stands: its branch and the files it has changed so far. */
  askContext(): PendingQuestion['worktree'] {
    const made = this.record;
    return made ? { branch: made.branch, files: this.worktrees.changedSoFar(made) } : undefined;
  }

  /**
   * A follow-up's plan once the thread's earlier runs are wholly done: a run that has ended may still
   * be recording its change (its processes going, the diff being written). The follow-up waits for
   * that, then continues from the record as it now is — never from the one read at submit, which a
   * capture finishing later would overwrite (losing the follow-up from the thread).
   */
  private async settledPlan(): Promise<WorktreePlan> {
    const reused = this.plan.reuse;
    if (!reused) return this.plan;
    await Promise.all(threadOf(reused).map((taskId) => this.context.task(taskId)?.finished));
    const now = this.worktrees.find(reused.taskId);
    if (!now || now.state === 'discarded' || now.state === 'kept') throw new Error(`the worktree of task ${reused.taskId} is gone`);
    return { ...this.plan, reuse: now };
  }
}
