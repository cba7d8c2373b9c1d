/**
 * The MCP task tools, one table (`TASK_TOOLS`, rows of ./tool-table.ts): each a few lines over the
 * one client. Descriptions and schemas are written for a model that has never read our docs.
 */
import * as z from 'zod';
import { isHubLost, type BackchannelClient } from '../client/index.js';
import { STATE_FILTER_NAMES, STATE_FILTERS, type StateFilter } from '../model/states.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { finalResult, jsonResult, summarize, withWholeResult } from './snapshots.js';
import { START_ANNOTATIONS, START_SHAPE, startTask } from './start-task.js';
import { defineTool, type McpTool } from './tool-table.js';

export { START_SHAPE, startTask, type StartArgs } from './start-task.js';

/** The longest one `wait_for_task` call blocks; the model calls it again for longer work. */
export const MAX_WAIT_SECONDS = 600;
const DEFAULT_WAIT_SECONDS = 60;
const DEFAULT_LOG_LINES = 100;

const TASK_ID = z.string().min(1).describe('The task id returned by start_task (a unique prefix is enough).');

/**
 * Resolves with the task's snapshot once it has ended, asks a question, or `timeoutMs` passed (then with its latest
 * snapshot); `onChange` sees every change meanwhile. The task is followed through the seam (its own stream on the
 * hub, never the panel's all-task stream); a hub that goes away fails the wait at once with its message.
 */
export async function waitForTask(
  client: BackchannelClient,
  id: string,
  timeoutMs: number,
  onChange?: (task: TaskSnapshot) => void,
  signal?: AbortSignal,
  /** False while the question is being put to the person some other way (elicitation): keep waiting. */
  returnOnQuestion: (task: TaskSnapshot) => boolean = () => true,
): Promise<TaskSnapshot> {
  const task = await client.follow(id);
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (error?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      task.stop();
      if (error) reject(error);
      else resolve(task.snapshot());
    };
    const look = (snapshot: TaskSnapshot): void => {
      onChange?.(snapshot);
      // A question needs the caller (answer_question): return it instead of waiting it out.
      if (isFinished(snapshot.state) || (snapshot.pendingQuestion && returnOnQuestion(snapshot))) finish();
    };
    const timer = setTimeout(() => finish(), timeoutMs);
    const onAbort = (): void => finish();
    signal?.addEventListener('abort', onAbort, { once: true });
    task.result.catch((error: unknown) => {
      if (isHubLost(error)) finish(error);
    });
    task.on('update', () => look(task.snapshot()));
    look(task.snapshot());
  });
}

export const TASK_TOOLS: readonly McpTool[] = [
  defineTool({
    name: 'start_task',
    title: 'Start a background sub-agent',
    description:
      'Starts a sub-agent in the background and returns its task_id at once, without waiting. ' +
      'Use it for long work (analyses, refactors, other AI agents); collect the result later with wait_for_task or get_task.',
    inputSchema: START_SHAPE,
    annotations: START_ANNOTATIONS,
    async handler(args, { client, track }) {
      const id = await startTask(client, args);
      track(id);
      return jsonResult({ task_id: id, state: 'queued', next: 'call wait_for_task with this task_id to collect the result' });
    },
  }),
  defineTool({
    name: 'get_task',
    title: 'Get a task',
    description:
      "A task's current state without waiting: progress, its last partial output, a pending question, the result or the failure.",
    inputSchema: { task_id: TASK_ID },
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ task_id }, { client }) {
      const { task } = await client.getTask(await client.resolveId(task_id));
      return jsonResult(summarize(await withWholeResult(client, task)));
    },
  }),
  defineTool({
    name: 'wait_for_task',
    title: 'Wait for a task',
    description:
      `Waits until the task ends (at most timeout_seconds, default ${DEFAULT_WAIT_SECONDS}, max ${MAX_WAIT_SECONDS}) and returns its result. ` +
      'If it is still running then, returns the progress so far with done=false: call again to keep waiting. ' +
      'If the task asks a question (state shows `question`), answer it with answer_question.',
    inputSchema: {
      task_id: TASK_ID,
      timeout_seconds: z.number().positive().max(MAX_WAIT_SECONDS).optional().describe('How long to wait at most.'),
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ task_id, timeout_seconds }, { client, progress, elicits }, extra) {
      const id = await client.resolveId(task_id);
      const token = extra._meta?.progressToken;
      const waitMs = (timeout_seconds ?? DEFAULT_WAIT_SECONDS) * 1000;
      const onChange = (t: TaskSnapshot): void => progress(token, t);
      const task = await waitForTask(client, id, waitMs, onChange, extra.signal, (t) => !elicits(t));
      if (task.pendingQuestion) return jsonResult(summarize(task));
      return isFinished(task.state) ? finalResult(await withWholeResult(client, task)) : jsonResult(summarize(task));
    },
  }),
  defineTool({
    name: 'list_tasks',
    title: 'List tasks',
    description: 'Lists recent Backchannel tasks (newest first) and the presets start_task can run.',
    inputSchema: {
      state: z
        .enum(STATE_FILTER_NAMES as [StateFilter, ...StateFilter[]])
        .optional()
        .describe('Only tasks in this state.'),
      limit: z.number().int().positive().max(200).optional().describe('At most this many tasks (default 20).'),
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ state, limit }, { client }) {
      const keep = (task: TaskSnapshot): boolean => state === undefined || STATE_FILTERS[state](task.state);
      const tasks = (await client.listTasks())
        .filter(keep)
        .reverse()
        .slice(0, limit ?? 20)
        .map(summarize);
      const presets = (await client.info()).presets.map((p) => ({ name: p.name, description: p.description }));
      return jsonResult({ tasks, presets });
    },
  }),
  defineTool({
    name: 'cancel_task',
    title: 'Cancel a task',
    description: 'Cancels a queued or running task: the sub-agent is asked to stop, then killed after a grace period.',
    inputSchema: { task_id: TASK_ID },
    // Stops work (the sub-agent's whole process tree); asking again changes nothing more.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handler({ task_id }, { client }) {
      const id = await client.resolveId(task_id);
      await client.cancel(id);
      return jsonResult({ task_id: id, cancelling: true });
    },
  }),
  defineTool({
    name: 'answer_question',
    title: "Answer a sub-agent's question",
    description: 'Answers the question a running sub-agent asked (get_task or wait_for_task show it under `question`).',
    inputSchema: { task_id: TASK_ID, answer: z.string().describe('The answer text (one of the choices, when it offers some).') },
    // Adds an answer, removes nothing; a second answer to the same question is refused.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler({ task_id, answer }, { client }) {
      const id = await client.resolveId(task_id);
      const question = (await client.getTask(id)).task.pendingQuestion;
      if (!question) throw new Error(`Task ${id} is not waiting for an answer`);
      await client.answer(id, question.askId, answer, 'mcp');
      return jsonResult({ task_id: id, answered: true });
    },
  }),
  defineTool({
    name: 'get_task_log',
    title: "Get a task's log",
    description: "The last lines of a task's log: the sub-agent's stdout and stderr and the broker's notes. Useful when a task failed.",
    inputSchema: {
      task_id: TASK_ID,
      lines: z.number().int().positive().max(1000).optional().describe(`How many of the last lines (default ${DEFAULT_LOG_LINES}).`),
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ task_id, lines }, { client }) {
      const id = await client.resolveId(task_id);
      const { log } = await client.getTask(id);
      const tail = log.slice(-(lines ?? DEFAULT_LOG_LINES)).map(({ time, stream, text }) => ({ time, stream, text }));
      return jsonResult({ task_id: id, lines: tail });
    },
  }),
];
