/**
 * `backchannel mcp`: a Model Context Protocol server (official TypeScript SDK) over the one client
 * (src/client) — the hub's tasks when one runs, so they show in the panel, else an own broker's.
 *
 * - Tools: one table (./all-tools.ts) of rows of one shape (./tool-table.ts), shared with the
 *   2026-07-28 server: the task tools (./tools.ts: start_task, get_task, wait_for_task, list_tasks,
 *   cancel_task, answer_question, get_task_log), the coding-task change tools (./change-tools.ts)
 *   and the schedule tools (./schedule-tools.ts: list_schedules, create_schedule).
 * - MCP Tasks: `run_task` (./run-task.ts) accepts a task-augmented `tools/call` and returns a task
 *   handle that IS the Backchannel task (./task-store.ts); called plainly, it waits for the result.
 * - The tasks this session started are followed by their own handles (./session-tasks.ts): progress
 *   notifications from partials, a sub-agent's question as an elicitation when the client supports
 *   it, and `notifications/tasks/status` for its MCP tasks (./notices.ts).
 * - The checks the SDK leaves to the server (./request-guards.ts), and `tasks/result` waiting on the
 *   task's own handle instead of the SDK's polling (./task-results.ts); docs/mcp.md lists the spec points.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Request } from '@modelcontextprotocol/sdk/types.js';
import type { BackchannelClient } from '../client/index.js';
import { MCP_TOOLS } from './all-tools.js';
import { notices } from './notices.js';
import { guardRequests } from './request-guards.js';
import { registerTaskTool, RUN_TASK } from './run-task.js';
import { SessionTasks } from './session-tasks.js';
import { parseStartArgs, startTask } from './start-task.js';
import { BridgeTaskStore } from './task-store.js';
import { waitForResults } from './task-results.js';
import { registerTools } from './tool-table.js';

export interface BackchannelMcp {
  readonly server: McpServer;
  /** Stops following this session's tasks (does not close the transport or the client). */
  dispose(): void;
}

export const INSTRUCTIONS =
  'Backchannel runs sub-agents in the background. start_task returns a task_id at once; collect the result with ' +
  'wait_for_task (bounded wait) or get_task. run_task supports MCP Tasks (call now, fetch later).';

/** Every tool and MCP task is a call or a handle of the one client (src/client). */
export function createMcpServer(client: BackchannelClient, version: string): BackchannelMcp {
  // Each MCP task the store creates joins the session's tasks (made below, once the server their notices go to is).
  const store = new BridgeTaskStore(
    client,
    (args, tags) => startTask(client, parseStartArgs(args), tags),
    (id, request) => session.track(id, progressTokenOf(request)),
  );
  const server = new McpServer(
    { name: 'backchannel', version },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: store,
      instructions: INSTRUCTIONS,
    },
  );
  const notify = notices(server, client, store);
  const session = new SessionTasks(client, notify);
  registerTools(server, MCP_TOOLS, {
    client,
    track: (id, token) => session.track(id, token),
    progress: notify.progress,
    elicits: (task) => session.has(task.id) && notify.canElicit(),
  });
  const startFailure = registerTaskTool(server, RUN_TASK, client);
  guardRequests(server, { [RUN_TASK.name]: { shape: RUN_TASK.inputSchema } }, startFailure);
  waitForResults(server, store, client);
  return { server, dispose: () => session.dispose() };
}

/**
 * A 2025-era connection served: the 2025-11-25 server made and connected to `transport` — one stdio connection
 * (./stdio-eras.ts) or one HTTP session (./http-legacy.ts), the same server either way.
 */
export async function serveLegacy(client: BackchannelClient, version: string, transport: Transport): Promise<BackchannelMcp> {
  const mcp = createMcpServer(client, version);
  await mcp.server.connect(transport);
  return mcp;
}

function progressTokenOf(request: Request): string | number | undefined {
  return (request.params as { _meta?: { progressToken?: string | number } } | undefined)?._meta?.progressToken;
}

export type { StartArgs } from './start-task.js';
