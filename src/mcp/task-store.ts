/**
 * The MCP SDK's `TaskStore` backed by the Backchannel bridge: an MCP task IS a Backchannel task (same
 * id), so `tasks/get`, `tasks/result` and `tasks/cancel` read and drive the broker, and a client that
 * reconnects — even to another `backchannel mcp` process — still finds a task the hub ran, finished
 * or not, because the hub keeps it in its journaled history.
 */
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Request, RequestId, Result, Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import type { BackchannelBridge } from '../bridge/contract.js';
import { BridgeError } from '../bridge/calls.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { finalResult, toMcpTask, withWholeResult } from './snapshots.js';
import type { StartArgs } from './tools.js';

export class BridgeTaskStore implements TaskStore {
  /** Tasks a client asked to cancel: reported `cancelled` at once, while the agent gets its grace period. */
  readonly #cancelling = new Set<string>();

  constructor(
    private readonly bridge: BackchannelBridge,
    private readonly startTask: (args: StartArgs) => Promise<string>,
    private readonly onCreated?: (taskId: string, request: Request) => void,
  ) {}

  async createTask(options: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<McpTask> {
    const args = ((request.params as { arguments?: unknown } | undefined)?.arguments ?? {}) as StartArgs;
    const id = await this.startTask(args);
    this.onCreated?.(id, request);
    return toMcpTask(await this.snapshot(id), options.ttl ?? null);
  }

  async getTask(taskId: string): Promise<McpTask | null> {
    const task = await this.find(taskId);
    if (!task) return null;
    const mcpTask = toMcpTask(task);
    if (this.#cancelling.has(taskId) && !isFinished(task.state)) return { ...mcpTask, status: 'cancelled', statusMessage: 'cancelling' };
    return mcpTask;
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
    if (!isFinished(task.state)) await this.bridge.cancel(taskId);
  }

  async listTasks(): Promise<{ tasks: McpTask[] }> {
    return { tasks: (await this.bridge.listTasks()).reverse().map((task) => toMcpTask(task)) };
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
