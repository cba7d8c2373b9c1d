/**
 * `run_task`, the tool for MCP Tasks: a task-augmented `tools/call` returns a task handle that IS
 * the Backchannel task (./task-store.ts); called plainly, the SDK waits for the result, and the
 * client cancelling that call (notifications/cancelled) cancels the task. Its row has the fields of
 * the tool tables (./tool-table.ts) with the SDK's MCP-task handler in place of `handler`.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { TaskToolExecution, ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type * as z from 'zod';
import type { BackchannelClient } from '../client/index.js';
import { START_ANNOTATIONS, START_SHAPE } from './start-task.js';
import type { McpTool } from './tool-table.js';

/** A tool run as an MCP task: a table row's fields, its task support, and the SDK's task handler built per server. */
export interface McpTaskTool<Shape extends z.ZodRawShape> extends Omit<McpTool<Shape>, 'handler'> {
  execution: TaskToolExecution;
  taskHandler(client: Pick<BackchannelClient, 'cancel'>, startFailures: Map<unknown, Error>): ToolTaskHandler<Shape>;
}

export const RUN_TASK: McpTaskTool<typeof START_SHAPE> = {
  name: 'run_task',
  title: 'Run a sub-agent as an MCP task',
  description:
    'Runs a sub-agent and returns its result. With MCP Tasks (task-augmented call) it returns a task handle at once; ' +
    'poll tasks/get and fetch tasks/result. Same arguments as start_task.',
  inputSchema: START_SHAPE,
  annotations: START_ANNOTATIONS,
  execution: { taskSupport: 'optional' },
  taskHandler: (client, startFailures) => ({
    createTask: async (_args, extra) => {
      let task;
      try {
        task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl });
      } catch (error) {
        startFailures.set(extra.requestId, error as Error);
        throw error;
      }
      // A plain call waits here until the task ends; the client cancelling it (notifications/cancelled) cancels the task.
      const cancel = (): void => void client.cancel(task.taskId, 'cancelled by the MCP client').catch(() => {});
      if (extra.signal.aborted) cancel();
      else extra.signal.addEventListener('abort', cancel, { once: true });
      return { task };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
  }),
};

/**
 * Registers `tool` on `server`. Returns the lookup request-guards.ts reports a failed task-augmented start with: why
 * the call of `requestId` created no task, if it did not (forgotten once asked).
 */
export function registerTaskTool<Shape extends z.ZodRawShape>(
  server: McpServer,
  tool: McpTaskTool<Shape>,
  client: Pick<BackchannelClient, 'cancel'>,
): (requestId: unknown) => Error | undefined {
  const startFailures = new Map<unknown, Error>();
  const { name, title, description, inputSchema, annotations, execution } = tool;
  const config = { title, description, inputSchema, execution, annotations };
  server.experimental.tasks.registerToolTask(name, config, tool.taskHandler(client, startFailures));
  return (requestId) => {
    const failure = startFailures.get(requestId);
    startFailures.delete(requestId);
    return failure;
  };
}
