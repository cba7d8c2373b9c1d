/**
 * `backchannel mcp`: a Model Context Protocol server (official TypeScript SDK) over any
 * `BackchannelBridge` — the hub's when one runs, so tasks show in the panel, else an own broker's.
 *
 * - Tools (./tools.ts): start_task, get_task, wait_for_task, list_tasks, cancel_task,
 *   answer_question, get_task_log.
 * - MCP Tasks: `run_task` accepts a task-augmented `tools/call` and returns a task handle that IS the
 *   Backchannel task (./task-store.ts); called plainly, it waits for the result.
 * - For tasks this session started: progress notifications from partials, and a sub-agent's question
 *   (`ask`) goes to the client as an elicitation when the client supports it (tied to its MCP task by
 *   `_meta["io.modelcontextprotocol/related-task"]`); for its MCP tasks, `notifications/tasks/status`
 *   on every status change.
 * - The checks the SDK leaves to the server (./request-guards.ts); docs/mcp.md lists the spec points.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { TaskSnapshot } from '../model/task.js';
import { isFinished } from '../model/task.js';
import type { BackchannelClient, BridgeEvent } from '../client/index.js';
import { guardRequests } from './request-guards.js';
import { BridgeTaskStore } from './task-store.js';
import { registerTools, START_SHAPE, startTask, type StartArgs } from './tools.js';
import { registerChangeTools } from './change-tools.js';
import { statusMessage, withContext } from './snapshots.js';

export interface BackchannelMcp {
  readonly server: McpServer;
  /** Stops watching the bridge (does not close the transport or the bridge). */
  dispose(): void;
}

interface Tracked {
  progressToken?: string | number;
  lastProgress?: string;
  askedId?: string;
}

/** Every tool and MCP task is a call or a handle of the one client (src/client). */
export function createMcpServer(client: BackchannelClient, version: string): BackchannelMcp {
  const tracked = new Map<string, Tracked>();
  /** Why a task-augmented call created no task, by request id (request-guards.ts reports it). */
  const startFailures = new Map<unknown, Error>();
  const store = new BridgeTaskStore(
    client,
    (args, tags) => startTask(client, args, tags),
    (id, request) => track(id, (request.params as { _meta?: { progressToken?: string | number } } | undefined)?._meta?.progressToken),
  );
  const server = new McpServer(
    { name: 'backchannel', version },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: store,
      instructions:
        'Backchannel runs sub-agents in the background. start_task returns a task_id at once; collect the result with ' +
        'wait_for_task (bounded wait) or get_task. run_task supports MCP Tasks (call now, fetch later).',
    },
  );

  function track(id: string, progressToken?: string | number): void {
    tracked.set(id, { ...(progressToken !== undefined ? { progressToken } : {}) });
  }

  function progress(token: string | number | undefined, task: TaskSnapshot): void {
    if (token === undefined || task.progress === undefined) return;
    const message = statusMessage(task);
    void server.server
      .notification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: task.progress, total: 100, ...(message ? { message } : {}) },
      })
      .catch(() => {});
  }

  const elicits = (task: TaskSnapshot): boolean => tracked.has(task.id) && server.server.getClientCapabilities()?.elicitation !== undefined;
  registerTools(server, { client, track, progress, elicits });
  registerChangeTools(server, client);

  server.experimental.tasks.registerToolTask(
    'run_task',
    {
      title: 'Run a sub-agent as an MCP task',
      description:
        'Runs a sub-agent and returns its result. With MCP Tasks (task-augmented call) it returns a task handle at once; ' +
        'poll tasks/get and fetch tasks/result. Same arguments as start_task.',
      inputSchema: START_SHAPE,
      execution: { taskSupport: 'optional' },
    },
    {
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
    },
  );
  guardRequests(server, { run_task: { shape: START_SHAPE } }, (requestId) => {
    const failure = startFailures.get(requestId);
    startFailures.delete(requestId);
    return failure;
  });

  function notifyStatus(task: TaskSnapshot): void {
    const changed = store.statusChange(task);
    if (!changed) return;
    void server.server.notification({ method: 'notifications/tasks/status', params: changed }).catch(() => {});
  }

  // One subscription for every task this session started: progress, questions, MCP task statuses.
  const unsubscribe = client.subscribe((event: BridgeEvent) => {
    for (const task of event.tasks) {
      const entry = tracked.get(task.id);
      if (!entry) continue;
      notifyStatus(task);
      const key = `${task.progress}:${JSON.stringify(task.lastPartial ?? null).slice(0, 200)}`;
      if (key !== entry.lastProgress) {
        entry.lastProgress = key;
        progress(entry.progressToken, task);
      }
      if (task.pendingQuestion && task.pendingQuestion.askId !== entry.askedId) {
        entry.askedId = task.pendingQuestion.askId;
        void elicit(task);
      }
      if (isFinished(task.state)) tracked.delete(task.id);
    }
  });

  /** Puts a sub-agent's question to the person through the client (elicitation), if it can. */
  async function elicit(task: TaskSnapshot): Promise<void> {
    const question = task.pendingQuestion;
    if (!question || !server.server.getClientCapabilities()?.elicitation) return;
    try {
      const relatedTask = store.isMcpTask(task.id) ? { _meta: { [RELATED_TASK_META_KEY]: { taskId: task.id } } } : {};
      const reply = await server.server.elicitInput({
        ...relatedTask,
        message: withContext(`Sub-agent "${task.label}" asks: ${question.question}`, question),
        requestedSchema: {
          type: 'object',
          properties: {
            answer: question.choices?.length
              ? { type: 'string', title: 'Answer', enum: question.choices }
              : { type: 'string', title: 'Answer' },
          },
          required: ['answer'],
        },
      });
      const answer = reply.content?.answer;
      if (reply.action === 'accept' && typeof answer === 'string') await client.answer(task.id, question.askId, answer);
    } catch {
      // The question stays pending: answer_question (or the panel) can still answer it.
    }
  }

  return {
    server,
    dispose() {
      unsubscribe();
      tracked.clear();
    },
  };
}

export type { StartArgs };
