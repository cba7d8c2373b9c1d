/**
 * The coding-tasks module's entry, the only file of it the broker's top imports: the kind itself
 * (CodingTasks, filling the seam in ../task-kinds.ts), the worktree registry type it exposes, and the
 * check of a new worktree's repository and base that front-ends promising worktrees run first.
 */
export { CodingTasks, type CodingOptions } from './coding-tasks.js';
export { planNewWorktree, type Worktrees } from '../worktree/worktrees.js';
