/**
 * Threads of runs: a coding task and its follow-ups (`TaskSpec.worktree.reuse`, linked by `parent`)
 * work in one worktree, one after the other, and are one thread (docs/coding-agents.md, "Follow
 * up"). The panel lists a thread as one row group: its newest run, with the earlier ones under it.
 *
 * A follow-up's change is recorded against the thread's base, from the worktree they share, so the
 * newest run's change is the thread's whole change; an earlier run's change is what the worktree
 * held when that run ended.
 *
 * Pure: a function of the tasks' ids, `parent` links and creation times, whatever else they carry.
 */

/** What grouping needs of a task. */
export interface ThreadRun {
  id: string;
  /** The run this one follows up. */
  parent?: string;
  createdAt: string;
}

export interface Thread<T extends ThreadRun = ThreadRun> {
  /** The first known run's id (the root of the `parent` links among the tasks given): the thread's name. */
  key: string;
  /** Every run, oldest first. */
  runs: T[];
  /** The newest run: the thread's status, step and (whole) change. */
  head: T;
}

export interface ThreadIndex<T extends ThreadRun = ThreadRun> {
  /** Every thread (a task without follow-ups is a thread of one run), in no particular order. */
  threads: Thread<T>[];
  /** The thread each task id belongs to. */
  byTask: Map<string, Thread<T>>;
}

/**
 * Groups tasks into threads by their `parent` links. A link to a task not among `tasks` (not
 * loaded, or gone from history) starts the thread at the linking run; a cycle of links (which the
 * broker never makes) is cut where it closes. Runs are ordered by creation time, then id.
 */
export function groupThreads<T extends ThreadRun>(tasks: Iterable<T>): ThreadIndex<T> {
  const byId = new Map<string, T>();
  for (const task of tasks) byId.set(task.id, task);
  const rootOf = new Map<string, string>();
  const findRoot = (start: T): string => {
    const path: string[] = [];
    const seen = new Set<string>();
    let at = start;
    let root: string | undefined;
    for (;;) {
      const known = rootOf.get(at.id);
      if (known !== undefined) {
        root = known;
        break;
      }
      path.push(at.id);
      seen.add(at.id);
      const parent = at.parent === undefined ? undefined : byId.get(at.parent);
      if (!parent || seen.has(parent.id)) {
        root = at.id;
        break;
      }
      at = parent;
    }
    for (const id of path) rootOf.set(id, root);
    return root;
  };
  const groups = new Map<string, T[]>();
  for (const task of byId.values()) {
    const root = findRoot(task);
    const runs = groups.get(root);
    if (runs) runs.push(task);
    else groups.set(root, [task]);
  }
  const threads: Thread<T>[] = [];
  const byTask = new Map<string, Thread<T>>();
  for (const [key, runs] of groups) {
    if (runs.length > 1) runs.sort(byCreation);
    const thread: Thread<T> = { key, runs, head: runs[runs.length - 1]! };
    threads.push(thread);
    for (const run of runs) byTask.set(run.id, thread);
  }
  return { threads, byTask };
}

function byCreation(a: ThreadRun, b: ThreadRun): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
