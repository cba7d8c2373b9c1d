/**
 * Coding tasks' changes through the client (docs/coding-agents.md): the diff, apply, discard, keep
 * branch and the list of worktrees — on the hub (its bridge calls) or, with no hub, on the worktree
 * registry on disk (`<data dir>/worktrees`), which a task run in this process used. Either way the
 * same calls, the same errors and the same fields.
 */
import path from 'node:path';
import { BridgeError, fromCoreError } from '../model/errors.js';
import { shortTaskId, taskIdsNamedBy } from '../model/task-ids.js';
import type { BackchannelBridge } from '../bridge/contract.js';
import type { ApplyOutcome, TaskChange, WorktreeRecord } from '../model/change.js';
import { defaultDataDir } from '../paths/data-dir.js';

export interface ChangeService {
  /** A coding task's change with its whole diff (`not_found` for a task without a worktree). */
  change(id: string): Promise<TaskChange>;
  /** Applies the changes of `ids` in order into the user's checkout: all, or none and the first conflict. */
  apply(ids: string[]): Promise<ApplyOutcome>;
  discard(id: string): Promise<WorktreeRecord>;
  keepBranch(id: string): Promise<WorktreeRecord>;
  /** The worktrees Backchannel made, oldest first. */
  list(): Promise<WorktreeRecord[]>;
  /** The whole id of the one coding task whose id starts with `prefix`; throws with a message a person can act on. */
  resolve(prefix: string): Promise<string>;
}

/** Where a Backchannel without a hub keeps worktrees: `<data dir>/worktrees` (the hub's too, by default). */
export function defaultWorktreeDir(dataDir = defaultDataDir()): string {
  return path.join(dataDir, 'worktrees');
}

/** The changes of the hub (or of any bridge). */
export function bridgeChanges(bridge: () => Promise<BackchannelBridge>): ChangeService {
  const service: ChangeService = {
    change: async (id) => (await bridge()).taskChange(id),
    apply: async (ids) => (await bridge()).applyChanges(ids),
    discard: async (id) => (await bridge()).discardChange(id),
    keepBranch: async (id) => (await bridge()).keepBranch(id),
    list: async () => (await bridge()).listWorktrees(),
    resolve: async (prefix) => resolveAmong(await service.list(), prefix),
  };
  return service;
}

/** What `registryChanges` works on: a worktree registry (`Worktrees`), or a broker's view of one. */
export interface ChangeSource {
  change(id: string): TaskChange | Promise<TaskChange>;
  apply(ids: readonly string[]): Promise<ApplyOutcome>;
  discard(id: string): Promise<WorktreeRecord>;
  keepBranch(id: string): Promise<WorktreeRecord>;
  list(): WorktreeRecord[];
}

/** The changes of a worktree registry in this process (a broker's, or the one on disk when no hub runs). */
export function registryChanges(source: ChangeSource): ChangeService {
  const translated = async <T>(run: () => T | Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw fromCoreError(error);
    }
  };
  return {
    change: (id) => translated(() => source.change(id)),
    apply: (ids) => translated(() => source.apply(ids)),
    discard: (id) => translated(() => source.discard(id)),
    keepBranch: (id) => translated(() => source.keepBranch(id)),
    list: async () => source.list(),
    resolve: async (prefix) => resolveAmong(source.list(), prefix),
  };
}

function resolveAmong(records: WorktreeRecord[], given: string): string {
  const ids = taskIdsNamedBy(new Set(records.flatMap((record) => [record.taskId, ...(record.followUps ?? [])])), given);
  if (ids.length === 1) return ids[0]!;
  if (ids.length === 0) throw new BridgeError('not_found', `No coding task with an id or short id "${given}" has a worktree`);
  throw new BridgeError(
    'invalid_request',
    `"${given}" matches ${ids.length} coding tasks (${ids.map(shortTaskId).join(', ')}); give more of the id`,
  );
}
