/**
 * What the server tells its client about a task, unasked: progress notifications (from partials, to
 * a request's progress token), `notifications/tasks/status` for the MCP tasks this session created,
 * and a sub-agent's question as an elicitation when the client supports it (tied to its MCP task by
 * `_meta["io.modelcontextprotocol/related-task"]`). Every send is best effort: a client that went
 * away loses nothing the tools and `tasks/*` cannot give it again.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { BackchannelClient } from '../client/index.js';
import type { TaskSnapshot } from '../model/task.js';
import { statusMessage, withContext } from './snapshots.js';
import type { BridgeTaskStore } from './task-store.js';

export interface Notices {
  /** A progress notification for `task` to `token` (none without a token or a progress figure). */
  progress(token: string | number | undefined, task: TaskSnapshot): void;
  /** `notifications/tasks/status` when `task` is an MCP task of this session whose status changed. */
  status(task: TaskSnapshot): void;
  /** True when the client takes elicitations. */
  canElicit(): boolean;
  /** Puts the task's pending question to the person through the client, and answers the task with the reply. */
  elicit(task: TaskSnapshot): Promise<void>;
}

export function notices(server: McpServer, client: Pick<BackchannelClient, 'answer'>, store: BridgeTaskStore): Notices {
  const send = (notification: Parameters<McpServer['server']['notification']>[0]): void =>
    void server.server.notification(notification).catch(() => {});
  const canElicit = (): boolean => server.server.getClientCapabilities()?.elicitation !== undefined;
  return {
    progress(token, task) {
      if (token === undefined || task.progress === undefined) return;
      const message = statusMessage(task);
      send({
        method: 'notifications/progress',
        params: { progressToken: token, progress: task.progress, total: 100, ...(message ? { message } : {}) },
      });
    },
    status(task) {
      const changed = store.statusChange(task);
      if (changed) send({ method: 'notifications/tasks/status', params: changed });
    },
    canElicit,
    async elicit(task) {
      const question = task.pendingQuestion;
      if (!question || !canElicit()) return;
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
        if (reply.action === 'accept' && typeof answer === 'string') await client.answer(task.id, question.askId, answer, 'mcp');
      } catch {
        // The question stays pending: answer_question (or the panel) can still answer it.
      }
    },
  };
}
