/**
 * The one client every front-end uses (the CLI, the gateway, MCP): the whole task surface — start
 * attached or detached, follow, get, list, log, result, answer, cancel, retry, the panel's all-task
 * stream, and the coding-task change (diff, apply, discard, keep branch) — written once against a
 * `TaskBackend` (./tasks.ts), so a front-end cannot tell whether its tasks run on the hub, in this
 * process, or only in the history on disk. Which backend a front-end gets is one policy:
 * `openClient` (./open.ts).
 *
 * It is a `BackchannelBridge` itself (every call of the one route table, ../bridge/calls.ts), so what
 * takes a bridge takes a client. Failures are `BridgeError`s with a code from one table.
 */
import type { BackchannelBridge, SubmitRequest } from '../bridge/contract.js';
import { BridgeError } from '../model/errors.js';
import { bridgeClient, type BridgeArgs, type BridgeMethod, type BridgeResult } from '../bridge/calls.js';
import type { LogLine, TaskSpec } from '../model/task.js';
import type { ChangeService } from './changes.js';
import type { TaskBackend, TaskLoad, TaskPlace, TaskRun } from './tasks.js';
import { shortTaskId, taskIdsNamedBy } from '../model/task-ids.js';

export interface BackchannelClient extends BackchannelBridge {
  /** Where the tasks run: `hub` (with its control endpoint), `local` (this process) or `history` (read-only). */
  readonly where: TaskPlace;
  /**
   * Tasks started through this client may ask for a git worktree (`TaskSpec.worktree`): the hub keeps
   * them in its data directory; a broker in this process only with a `dataDir` or a `worktreeDir`;
   * the history starts no tasks.
   */
  readonly keepsWorktrees: boolean;
  /** Coding tasks' changes: diff, apply, discard, keep branch, the worktree list (docs/coding-agents.md). */
  readonly changes: ChangeService;
  /**
   * Starts a task attached to this client and returns its handle: result, ordered updates, cancel,
   * answer. On the hub, a task whose client goes away (closed, killed) before it ended is cancelled.
   */
  run(spec: TaskSpec): Promise<TaskRun>;
  /** Starts a task detached from this client (it outlives it): the id at once. Throws like `run`. */
  start(spec: TaskSpec): Promise<{ id: string }>;
  /** `start` for a request in the wire's shape (a preset's, the panel's): the bridge's own call. */
  submit(request: SubmitRequest): Promise<{ id: string }>;
  /** The handle of an existing task: its picture now, then every change until it exits. */
  follow(id: string): Promise<TaskRun>;
  /**
   * The full id of the one task whose id starts with `prefix` (the task commands and the MCP tools
   * take abbreviated ids); a `not_found` or `invalid_request` BridgeError a person can act on otherwise.
   */
  resolveId(prefix: string): Promise<string>;
  /** A task's log lines (the hub keeps the newest ones). */
  log(id: string): Promise<LogLine[]>;
  /** Running and queued tasks, counted by whoever runs them. */
  counts(): Promise<TaskLoad>;
  /** Lets go of the hub, or closes what this client opened (a private broker, the history). */
  close(): Promise<void>;
}

/** A task id in full (a UUID). */
const WHOLE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The bridge calls on coding tasks' changes, answered by the backend's `changes` (the history has them too). */
const CHANGE_CALLS = {
  taskChange: 'change',
  applyChanges: 'apply',
  discardChange: 'discard',
  keepBranch: 'keepBranch',
  listWorktrees: 'list',
} as const satisfies Partial<Record<BridgeMethod, keyof ChangeService>>;

/** The client over `backend`: every call of the one route table, and the task handles. */
export function createClient(backend: TaskBackend): BackchannelClient {
  const call = <M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> => {
    const target = Object.hasOwn(CHANGE_CALLS, method)
      ? (backend.changes[CHANGE_CALLS[method as keyof typeof CHANGE_CALLS]] as (...a: unknown[]) => Promise<BridgeResult<M>>)
      : (backend.bridge[method] as (...a: unknown[]) => Promise<BridgeResult<M>>).bind(backend.bridge);
    return target(...args);
  };
  const calls = bridgeClient(call, (listener) => backend.bridge.subscribe(listener));
  const client = Object.assign(calls, {
    changes: backend.changes,
    run: (spec: TaskSpec) => backend.run(spec),
    start: (spec: TaskSpec) => backend.start(spec),
    follow: (id: string) => backend.follow(id),
    async resolveId(prefix: string) {
      // A whole id is looked up alone: no task list to fetch.
      if (
        WHOLE_ID.test(prefix) &&
        (await calls.getTask(prefix).then(
          () => true,
          () => false,
        ))
      )
        return prefix;
      const matches = taskIdsNamedBy(
        (await calls.listTasks()).map((task) => task.id),
        prefix,
      );
      if (matches.length === 1) return matches[0]!;
      if (matches.length === 0) throw new BridgeError('not_found', `No task with an id starting with "${prefix}"`);
      throw new BridgeError(
        'invalid_request',
        `"${prefix}" matches ${matches.length} tasks (short ids ${matches.map(shortTaskId).join(', ')}); give more of the id`,
      );
    },
    log: async (id: string) => (await calls.getTask(id)).log,
    counts: () => backend.counts(),
    close: () => backend.close(),
  });
  // Read each time: a client that found the hub again may be on another endpoint.
  return Object.defineProperties(client, {
    where: { get: () => backend.where, enumerable: true },
    keepsWorktrees: { get: () => backend.keepsWorktrees, enumerable: true },
  }) as BackchannelClient;
}
