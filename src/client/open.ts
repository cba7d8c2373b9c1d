/**
 * The one "no hub" policy, for every front-end (README, "One hub"):
 *
 * - a hub runs (the desktop app, `serve`, or an `mcp` that became it): tasks go to it;
 * - none runs: the front-end's tasks run in a broker of its own process, privately (not in a panel
 *   or the shared history) — `run`, the gateway. A front-end whose tasks must outlive its own
 *   requests (MCP: a client comes back for a task's result) starts the hub itself instead, when it
 *   can take the data directory, and the others find it (src/cli/commands/mcp.ts);
 * - the task commands read the history on disk, read-only (./history.ts).
 * - `--local` (or options only a broker of one's own can have) skips the hub.
 */
import { TaskBroker, type BrokerOptions } from '../broker/broker.js';
import type { RunRule } from '../broker/run-policy.js';
import { ownerRunPolicy } from '../hub/run-policy.js';
import { findHub } from './discover.js';
import { HubTasks } from './hub-tasks.js';
import { localTasks } from './local-tasks.js';
import type { TaskService } from './tasks.js';
import { bridgeChanges, defaultWorktreeDir, registryChanges, type ChangeService } from './changes.js';
import { Worktrees } from '../broker/worktree/worktrees.js';

export interface OpenTasksOptions {
  /** Run in this process even when a hub runs. */
  local?: boolean;
  /** The private broker's options, when one is made. */
  broker?: BrokerOptions;
  /** What the private broker's tasks may run beyond the owner's run policy (a gateway's own models). */
  runRules?: readonly RunRule[];
}

export interface OpenedTasks {
  tasks: TaskService;
  /** The private broker, when the tasks run in this process. */
  broker: TaskBroker | undefined;
  /** Lets go of the hub, or closes the private broker (its tasks' processes gone). */
  close(): Promise<void>;
}

export async function openTasks(options: OpenTasksOptions = {}): Promise<OpenedTasks> {
  const hub = options.local ? undefined : await findHub();
  if (hub) {
    const tasks = new HubTasks(hub, () => findHub());
    return { tasks, broker: undefined, close: () => tasks.close() };
  }
  // Not awaiting `ready`: a broker that cannot start fails each task with the reason (the task's own error).
  const broker = new TaskBroker({ runPolicy: ownerRunPolicy({ extra: options.runRules }), ...options.broker });
  return { tasks: localTasks(broker), broker, close: () => broker.close() };
}

/**
 * Coding tasks' changes for a front-end (`diff`, `apply`, `discard`, MCP): the hub's when one runs,
 * else the worktree registry on disk that tasks run without a hub used (the same directory).
 */
export async function openChanges(): Promise<{ changes: ChangeService; close(): void }> {
  const hub = await findHub();
  if (hub) return { changes: bridgeChanges(async () => hub), close: () => hub.close() };
  return { changes: registryChanges(new Worktrees(defaultWorktreeDir())), close: () => {} };
}
