/**
 * The MCP Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on a 2026-07-28 server (SDK v2): the server
 * declares it in `server/discover`, and for a request whose client declares it in its per-request capabilities
 * (`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`), `run_task` answers with a task
 * (`resultType: "task"`) instead of waiting. The SDK v2 does not implement the extension (its own roadmap lists it),
 * so this file does, against the extension's wire shapes (`@modelcontextprotocol/ext-tasks/core/v2`).
 *
 * - A task IS the Backchannel task (same id, from the hub's journaled history): `tasks/get`, `tasks/update` and
 *   `tasks/cancel` hold no state of their own, so another `backchannel mcp` process, or the hub's HTTP endpoint,
 *   answers for a task any of them started.
 * - Status: a question pending → `input_required` with the question as `inputRequests` (./input-requests.ts);
 *   cancelled → `cancelled`; any other end → `completed` with the tool result (a failed sub-agent is a tool error,
 *   `isError: true`, never the extension's `failed`, which is for JSON-RPC errors); else `working`.
 * - `ttlMs`: what a 2025-11-25 client asked for (kept in the task's tags), else null — the history keeps the task;
 *   `pollIntervalMs`: POLL_INTERVAL_MS.
 * - `tasks/update` answers the pending question from an accepted reply to its key and ignores every other key;
 *   `tasks/cancel` cancels the sub-agent's whole process tree. Both acknowledge with an empty result.
 * - An unknown task id is -32602; a request whose client did not declare the extension is -32021.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { BridgeError, type BackchannelClient } from '../client/index.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { answerFromResponses, questionInputRequests, type ElicitInputRequest } from './input-requests.js';
import { finalResult, POLL_INTERVAL_MS, snapshotUpdatedAt, statusMessage, withWholeResult } from './snapshots.js';
import { TTL_TAG } from './task-store.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export type ModernTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** The extension's `Task`: what `resultType: "task"` carries, and the base of `tasks/get`'s `DetailedTask`. */
export interface ModernTask {
  taskId: string;
  status: ModernTaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs: number;
}

/** `tasks/get`'s answer (and a status notification's params): the task with its status's own field. */
export type DetailedTask = ModernTask & {
  inputRequests?: Record<string, ElicitInputRequest>;
  result?: Record<string, unknown>;
};

const TASK_ID_PARAMS = z.object({ taskId: z.string().min(1) });
/** The results are the SDK's to stamp (`resultType: "complete"`); their fields are checked by the tests. */
const ANY_RESULT = z.looseObject({});

export function modernStatus(task: TaskSnapshot): ModernTaskStatus {
  if (task.state === 'cancelled') return 'cancelled';
  if (isFinished(task.state)) return 'completed';
  return task.pendingQuestion ? 'input_required' : 'working';
}

/** The task as the extension's `Task` (the seed of a `resultType: "task"` answer). */
export function modernTask(task: TaskSnapshot): ModernTask {
  const ttl = Number(task.tags?.[TTL_TAG]);
  const message = statusMessage(task);
  return {
    taskId: task.id,
    status: modernStatus(task),
    ...(message ? { statusMessage: message } : {}),
    createdAt: task.createdAt,
    lastUpdatedAt: snapshotUpdatedAt(task),
    ttlMs: Number.isFinite(ttl) ? ttl : null,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
}

/**
 * The task as `tasks/get` shows it: its pending question as `inputRequests`, or its whole tool result once ended,
 * as a 2026-07-28 `CallToolResult` (`resultType: "complete"`, which the extension's own client requires).
 */
export async function detailedTask(client: Pick<BackchannelClient, 'taskResult'>, task: TaskSnapshot): Promise<DetailedTask> {
  const base = modernTask(task);
  if (base.status === 'input_required') return { ...base, inputRequests: questionInputRequests(task) ?? {} };
  if (base.status === 'completed') {
    return { ...base, result: { ...finalResult(await withWholeResult(client, task)), resultType: 'complete' } };
  }
  return base;
}

/** True when the request's client declared the Tasks extension in its per-request capabilities. */
export function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Declares the extension and serves `tasks/get`, `tasks/update` and `tasks/cancel` on `server`. */
export function serveTaskMethods(server: McpServer, client: BackchannelClient): void {
  server.server.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } });
  const handle = (method: string, run: (taskId: string, ctx: ServerContext) => Promise<object>): void => {
    server.server.setRequestHandler(method, { params: TASK_ID_PARAMS, result: ANY_RESULT }, async (args: unknown, ctx: ServerContext) => {
      requireTasks(ctx);
      return { ...(await run((args as z.infer<typeof TASK_ID_PARAMS>).taskId, ctx)) };
    });
  };
  handle('tasks/get', async (taskId) => detailedTask(client, await findTask(client, taskId)));
  // The SDK lifts `inputResponses` off the params of every request, as for a retried call: they are in the context.
  handle('tasks/update', async (taskId, ctx) => {
    if (ctx.mcpReq.inputResponses === undefined)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'tasks/update needs inputResponses');
    await answerFromResponses(client, await findTask(client, taskId), ctx.mcpReq.inputResponses);
    return {};
  });
  handle('tasks/cancel', async (taskId) => {
    const task = await findTask(client, taskId);
    if (!isFinished(task.state)) await client.cancel(task.id, 'cancelled by the MCP client');
    return {};
  });
}

function requireTasks(ctx: ServerContext): void {
  if (!declaresTasks(ctx)) {
    throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
  }
}

/** The task of an exact id (the task ids the extension handed out); -32602 when there is none. */
export async function findTask(client: Pick<BackchannelClient, 'getTask'>, taskId: string): Promise<TaskSnapshot> {
  try {
    return (await client.getTask(taskId)).task;
  } catch (error) {
    if (BridgeError.is(error) && error.code === 'not_found') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Failed to retrieve task: Task not found (${taskId})`);
    }
    throw error;
  }
}
