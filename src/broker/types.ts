/** The shapes of the broker's public API: its events, its statistics, its coding calls (a task's handle is model/handle.ts). */
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import type { CodingTasks } from './coding/index.js';

export type { BrokerStats } from './history/registry.js';
export type { TaskHandle } from '../model/handle.js';

/**
 * The coding kind's own calls, as `TaskBroker.coding` offers them: a coding task's change and its
 * whole diff, apply, discard, keep the branch, the list of worktrees, and the registry itself
 * (undefined when the broker has no place for worktrees). See docs/coding-agents.md.
 */
export type CodingChanges = Pick<CodingTasks, 'change' | 'apply' | 'discard' | 'keepBranch' | 'list' | 'worktrees'>;

/** The broker's events; `on`/`off`/`emit` are typed from this map. */
export interface BrokerEvents {
  /**
   * Every task change, with its task's picture right after it: a function, so the picture is made
   * only for a listener that calls it (one task's feed; see hub/task-feed.ts).
   */
  update: [update: TaskUpdate, picture: () => TaskSnapshot | undefined];
  /** Something the broker could not do but survived (e.g. history cannot be written). */
  warning: [message: string];
  /** The queue was paused (`true`) or resumed (`false`). */
  paused: [paused: boolean];
  /** Finished tasks that left memory (the history limit): `tasks()`/`get()` no longer know them. */
  removed: [taskIds: string[]];
}
