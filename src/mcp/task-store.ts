/**
 * The MCP SDK's `TaskStore` backed by the Backchannel bridge: an MCP task IS a Backchannel task (same
 * id), so `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` read and drive the broker, and a
 * client that reconnects — even to another `backchannel mcp` process — still finds a task the hub ran,
 * finished or not, because the hub keeps it in its journaled history.
 *
 * What the specification (2025-11-25, Tasks) asks of a task's picture, and where it comes from:
 * - `ttl`: the retention the client asked for, kept in the task's tags so every process reports the
 *   same number; null (unlimited by time) when it asked for none — the history keeps the task.
 * - `lastUpdatedAt` moves with the status: from the snapshot's own times, and for a change the snapshot
 *   has no time for (a question answered, a cancel requested) from the moment this server saw it.
 * - Once cancelled, a task stays `cancelled`, whatever its agent does in its grace period.
 * - `tasks/list` pages with opaque cursors (`nextCursor` while more remain); a cursor this server did
 *   not hand out is refused with -32602.
 */
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Request, RequestId, Result, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import { BridgeError, type BackchannelBridge } from '../client/index.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { finalResult, mcpStatus, snapshotUpdatedAt, toMcpTask, withWholeResult } from './snapshots.js';

/** Tasks per `tasks/list` page: a client pages on with `nextCursor`. */
export const TASKS_PAGE_SIZE = 20;
/** The tag that carries the `ttl` a client asked for (milliseconds). */
export const TTL_TAG = 'mcp_ttl_ms';
/** Marks a cursor as this server's (a cursor is the bridge's page cursor behind it, base64url). */
const CURSOR_MARK = 'bc1:';

const TERMINAL = new Set<McpTask['status']>(['completed', 'failed', 'cancelled']);

export class BridgeTaskStore implements TaskStore {
  /** Tasks a client asked to cancel: reported `cancelled` at once and for good, while the agent gets its grace period. */
  readonly #cancelling = new Set<string>();
  /** Tasks this server described: the status last described, and since when (`lastUpdatedAt`, never going back). */
  readonly #clock = new Map<string, { status: McpTask['status']; at: string }>();
  /** Tasks this session created through a task-augmented call: the status last reported to the client. */
  readonly #reported = new Map<string, McpTask['status']>();

  constructor(
    private readonly bridge: BackchannelBridge,
    /** Starts the task of a call from its arguments as the client sent them (the caller parses them). */
    private readonly startTask: (args: unknown, tags: Record<string, string>) => Promise<string>,
    private readonly onCreated?: (taskId: string, request: Request) => void,
  ) {}

  async createTask(options: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<McpTask> {
    const params = request.params as { arguments?: unknown; task?: unknown } | undefined;
    const ttl = typeof options.ttl === 'number' ? options.ttl : undefined;
    const id = await this.startTask(params?.arguments ?? {}, ttl === undefined ? {} : { [TTL_TAG]: String(ttl) });
    // A plain (not task-augmented) call runs through here too; only a client that holds the handle hears of its status.
    if (params?.task !== undefined) this.#reported.set(id, 'working');
    this.onCreated?.(id, request);
    return this.describe(await this.snapshot(id));
  }

  async getTask(taskId: string): Promise<McpTask | null> {
    const task = await this.find(taskId);
    return task ? this.describe(task) : null;
  }

  /** The broker records results itself; the SDK's copy is not needed. */
  async storeTaskResult(): Promise<void> {}

  async getTaskResult(taskId: string): Promise<Result> {
    return finalResult(await withWholeResult(this.bridge, await this.snapshot(taskId)));
  }

  async updateTaskStatus(taskId: string, status: McpTask['status']): Promise<void> {
    if (status !== 'cancelled') return; // working/input_required follow the broker's own state
    this.#cancelling.add(taskId);
    const task = await this.snapshot(taskId);
    if (!isFinished(task.state)) await this.bridge.cancel(taskId, 'cancelled by the MCP client');
  }

  async listTasks(cursor?: string): Promise<{ tasks: McpTask[]; nextCursor?: string }> {
    const before = cursor === undefined ? undefined : pageCursor(cursor);
    const page = await this.bridge.listTaskPage({ limit: TASKS_PAGE_SIZE, ...(before === undefined ? {} : { before }) });
    const tasks = page.tasks.map((task) => this.describe(task));
    return page.next === undefined ? { tasks } : { tasks, nextCursor: mcpCursor(page.next) };
  }

  /** True for a task this session created through a task-augmented call (its client holds the task id). */
  isMcpTask(taskId: string): boolean {
    return this.#reported.has(taskId);
  }

  /**
   * For a task this session created through a task-augmented call: its picture when its status changed since the
   * last report (send it as `notifications/tasks/status`), else undefined.
   */
  statusChange(task: TaskSnapshot): McpTask | undefined {
    const last = this.#reported.get(task.id);
    if (last === undefined) return undefined;
    const now = this.describe(task);
    if (now.status === last) return undefined;
    if (TERMINAL.has(now.status)) this.#reported.delete(task.id);
    else this.#reported.set(task.id, now.status);
    return now;
  }

  /** The task as MCP Tasks shows it (see the header). */
  describe(task: TaskSnapshot): McpTask {
    const status = this.#cancelling.has(task.id) ? 'cancelled' : mcpStatus(task);
    const ttlTag = Number(task.tags?.[TTL_TAG]);
    return toMcpTask(task, { status, ttl: Number.isFinite(ttlTag) ? ttlTag : null, lastUpdatedAt: this.updatedAt(task, status) });
  }

  private updatedAt(task: TaskSnapshot, status: McpTask['status']): string {
    const derived = snapshotUpdatedAt(task);
    const seen = this.#clock.get(task.id);
    if (isFinished(task.state)) {
      // Kept, not dropped: a finished task is described again (its status notification, then
      // tasks/get or the result), and each time its lastUpdatedAt must not go back before a time
      // this server stamped (an answer seen after the agent's own end time, on another clock).
      const at = seen && seen.at > derived ? seen.at : derived;
      this.#clock.set(task.id, { status, at });
      return at;
    }
    let at = derived;
    if (seen?.status === status) at = seen.at > derived ? seen.at : derived;
    else if (seen && seen.at >= derived) at = new Date().toISOString(); // changed, and the snapshot has no newer time
    this.#clock.set(task.id, { status, at });
    return at;
  }

  private async find(taskId: string): Promise<TaskSnapshot | undefined> {
    try {
      return (await this.bridge.getTask(taskId)).task;
    } catch (error) {
      if (BridgeError.is(error) && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  private async snapshot(taskId: string): Promise<TaskSnapshot> {
    const task = await this.find(taskId);
    if (!task) throw new Error(`No Backchannel task ${taskId}`);
    return task;
  }
}

function mcpCursor(bridgeCursor: string): string {
  return Buffer.from(CURSOR_MARK + bridgeCursor, 'utf8').toString('base64url');
}

/** The bridge's page cursor behind an MCP cursor; -32602 for one this server did not hand out. */
function pageCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(CURSOR_MARK) || text.length === CURSOR_MARK.length || mcpCursor(text.slice(CURSOR_MARK.length)) !== cursor) {
    throw new Error('Unknown cursor: pass the nextCursor of a previous tasks/list page, unchanged'); // the SDK sends it as -32602
  }
  return text.slice(CURSOR_MARK.length);
}
