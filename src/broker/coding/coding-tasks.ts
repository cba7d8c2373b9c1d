/**
 * Coding tasks (`TaskSpec.worktree`, docs/coding-agents.md), the first kind of task on the seam in
 * ../task-kinds.ts. At submit a request is checked (one line when it is wrong) and a follow-up is
 * refused while its thread still works; each accepted task gets a CodingRun (./coding-run.ts). The
 * change operations (diff, apply, discard, keep) wait for a task that has ended until its change is
 * recorded, and refuse to remove a worktree a task still works in. Worktrees older than
 * `worktreeMaxAgeMs` are swept at start and hourly, never one a live task works in.
 *
 * The git side (making worktrees, diffs, applying) is ../worktree/; this module knows the broker's
 * tasks only through the KindContext.
 */
import path from 'node:path';
import type { ApplyOutcome, TaskChange, WorktreeRecord, WorktreeRequest } from '../../model/change.js';
import type { TaskSpec } from '../../model/task.js';
import { BrokerError } from '../errors.js';
import { Worktrees } from '../worktree/worktrees.js';
import type { KindContext, TaskKind } from '../task-kinds.js';
import { CodingRun } from './coding-run.js';
import { followUpSpec, lastOf, sessionOf, threadOf } from './follow-up.js';

/** How often worktrees past `worktreeMaxAgeMs` are looked for (besides at start). */
const WORKTREE_SWEEP_MS = 60 * 60_000;

/** The broker's options coding tasks read (see BrokerOptions). */
export interface CodingOptions {
  /** Where worktrees are made. @default `<dataDir>/worktrees`; without either, a task asking for one is refused */
  worktreeDir?: string | undefined;
  dataDir?: string | undefined;
  /** Worktrees older than this are discarded. @default never */
  worktreeMaxAgeMs?: number | undefined;
}

export class CodingTasks implements TaskKind {
  /** Coding tasks' worktrees, when the broker has a place for them. */
  readonly worktrees: Worktrees | undefined;
  private readonly maxAgeMs: number | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    options: CodingOptions,
    private readonly context: KindContext,
  ) {
    const dir = options.worktreeDir ?? (options.dataDir ? path.join(options.dataDir, 'worktrees') : undefined);
    this.worktrees = dir ? new Worktrees(dir) : undefined;
    this.maxAgeMs = options.worktreeMaxAgeMs;
  }

  /** The worktree a spec asks for, checked now (a bad request is refused here, one line). */
  plan(_id: string, spec: TaskSpec, cwd: string): CodingRun | undefined {
    if (spec.worktree === undefined || spec.worktree === false) return undefined;
    if (!this.worktrees) {
      throw new BrokerError('invalid_option', 'This broker has no directory for worktrees (give it a `dataDir` or a `worktreeDir`).');
    }
    const request: WorktreeRequest = spec.worktree === true ? {} : spec.worktree;
    const plan = this.worktrees.plan(cwd, request);
    const reused = plan.reuse;
    if (!reused) return new CodingRun(this.worktrees, plan, this.context);
    const busy = this.workingIn(reused);
    if (busy) throw new BrokerError('invalid_option', `task ${busy} still works in that worktree; follow up once it ended`);
    const ended = sessionOf(this.context.task(lastOf(reused))?.task.final);
    return new CodingRun(this.worktrees, plan, this.context, followUpSpec(spec, reused, ended));
  }

  start(): void {
    const maxAge = this.maxAgeMs;
    const worktrees = this.worktrees;
    if (!worktrees || maxAge === undefined) return;
    const sweep = () => {
      const inUse = (id: string) => this.context.task(id)?.task.finished === false;
      worktrees.sweep(maxAge, inUse).then(
        (swept) => swept.length > 0 && this.context.logger.info(`discarded ${swept.length} worktree(s) older than ${maxAge} ms`),
        (error: unknown) => this.context.warn(`worktree sweep: ${(error as Error).message}`),
      );
    };
    sweep();
    this.sweepTimer = setInterval(sweep, WORKTREE_SWEEP_MS);
    this.sweepTimer.unref();
  }

  close(): void {
    clearInterval(this.sweepTimer);
  }

  /**
   * A coding task's change and its whole diff; rejects with BrokerError('unknown_task') when it has
   * none. A task that has ended but whose processes are still going is waited for: its change is
   * recorded once they are gone (a caller that saw `ended` must not get an empty diff).
   */
  async change(id: string): Promise<TaskChange> {
    await this.changeSettled(id);
    return this.requireWorktrees().change(id);
  }

  /** Every worktree the registry lists (made by Backchannel), oldest first. */
  list(): WorktreeRecord[] {
    return this.worktrees?.list() ?? [];
  }

  /** Applies the changes of `ids`, in order, into the user's checkout: all or none (see Worktrees.apply). */
  async apply(ids: readonly string[]): Promise<ApplyOutcome> {
    for (const id of ids) await this.changeSettled(id);
    return this.requireWorktrees().apply(ids);
  }

  /** Removes a finished task's worktree and branch. */
  async discard(id: string): Promise<WorktreeRecord> {
    this.refuseWhileWorking(id);
    await this.changeSettled(id);
    return this.requireWorktrees().discard(id);
  }

  /** Removes a finished task's worktree, keeping its branch. */
  async keepBranch(id: string): Promise<WorktreeRecord> {
    this.refuseWhileWorking(id);
    await this.changeSettled(id);
    return this.requireWorktrees().keepBranch(id);
  }

  /** Waits until the coding task `id` (when it ended) has its change recorded. */
  private async changeSettled(id: string): Promise<void> {
    const held = this.context.task(id);
    if (held?.runs.some((run) => run instanceof CodingRun) && held.task.finished) await held.finished;
  }

  private requireWorktrees(): Worktrees {
    if (!this.worktrees) throw new BrokerError('unknown_task', 'This broker keeps no worktrees');
    return this.worktrees;
  }

  private refuseWhileWorking(id: string): void {
    const record = this.requireWorktrees().find(id);
    const busy = record && this.workingIn(record);
    if (busy) throw new BrokerError('worktree', `task ${busy} still works in that worktree; cancel it or wait for it to end`);
  }

  /** The task of the worktree's thread that has not ended yet, if one has not. */
  private workingIn(record: WorktreeRecord): string | undefined {
    return threadOf(record).find((taskId) => this.context.task(taskId)?.task.finished === false);
  }
}
