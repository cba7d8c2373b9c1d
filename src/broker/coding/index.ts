/**
 * The coding-tasks module's entry, the only file of it the broker's top imports: the kind itself
 * (CodingTasks, filling the seam in ../task-kinds.ts) and the worktree registry type it exposes.
 */
export { CodingTasks, type CodingOptions } from './coding-tasks.js';
export type { Worktrees } from '../worktree/worktrees.js';
