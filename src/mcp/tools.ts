/**
 * The MCP tools: each a few lines over the bridge (the hub's, or an own broker's). Descriptions and
 * schemas are written for a model that has never read our docs.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { HubLostError, type BackchannelClient, type SubmitRequest } from '../client/index.js';
import { STATE_FILTER_NAMES, STATE_FILTERS, type StateFilter } from '../model/states.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import { finalResult, jsonResult, summarize, withWholeResult } from './snapshots.js';
import { WORKTREE_SHAPE, worktreeRequest } from './change-tools.js';

/** The longest one `wait_for_task` call blocks; the model calls it again for longer work. */
export const MAX_WAIT_SECONDS = 600;
const DEFAULT_WAIT_SECONDS = 60;
const DEFAULT_LOG_LINES = 100;

/**
 * A typed argument that a client may also send as JSON text (a CLI that reads `input={"path":"."}` as a string): the
 * text is parsed, and a value that still does not fit — a string that is not JSON of that type — is refused with the
 * schema's message. The JSON Schema clients see is the declared type's.
 */
function jsonArgument<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }, schema);
}

export const START_SHAPE = {
  preset: z
    .string()
    .optional()
    .describe('Name of a Backchannel preset to run (see list_tasks → presets). Give either `preset` or `command`.'),
  template: z.string().optional().describe('Deprecated: the old name of `preset`.'),
  command: z
    .string()
    .optional()
    .describe('Executable or script to run as the sub-agent (a .js/.mjs/.ts file runs with Node). Not a shell string.'),
  args: jsonArgument(z.array(z.string(), { error: 'must be an array of strings' }))
    .optional()
    .describe('Arguments for `command`.'),
  input: jsonArgument(z.record(z.string(), z.unknown(), { error: 'must be a JSON object, e.g. {"prompt": "…"}' }))
    .optional()
    .describe('A JSON object handed to the sub-agent as its task input (e.g. {"prompt": "…"}).'),
  label: z.string().optional().describe('Short name shown in the task list and the panel.'),
  cwd: z.string().optional().describe('Working directory (absolute path). Default: where the Backchannel hub runs.'),
  timeout_seconds: z.number().positive().optional().describe('Fail the task as "timeout" after this many seconds.'),
  ...WORKTREE_SHAPE,
};
export type StartArgs = {
  preset?: string;
  /** Deprecated: the old name of `preset`, still accepted. */
  template?: string;
  command?: string;
  args?: string[];
  input?: Record<string, unknown>;
  label?: string;
  cwd?: string;
  timeout_seconds?: number;
  worktree?: boolean;
  base?: string;
};

const TASK_ID = z.string().min(1).describe('The task id returned by start_task (a unique prefix is enough).');

/** Submits a task from the tools' arguments (with `tags` besides the source); returns its id. */
export async function startTask(client: BackchannelClient, args: StartArgs, tags: Record<string, string> = {}): Promise<string> {
  let request: SubmitRequest;
  const presetName = args.preset ?? args.template;
  if (presetName) {
    const preset = (await client.info()).presets.find((p) => p.name === presetName);
    if (!preset) throw new Error(`No preset named "${presetName}" (list_tasks lists them)`);
    request = { ...preset.request };
  } else if (args.command) {
    request = { command: args.command, args: args.args ?? [] };
  } else {
    throw new Error('Give either `preset` (a preset name) or `command` (the sub-agent to run)');
  }
  if (args.args && presetName) request.args = [...(request.args ?? []), ...args.args];
  if (args.input !== undefined) request.input = args.input;
  if (args.label) request.label = args.label;
  if (args.cwd) request.cwd = args.cwd;
  if (args.timeout_seconds) request.timeoutMs = Math.round(args.timeout_seconds * 1000);
  Object.assign(request, worktreeRequest(args));
  request.tags = { ...tags, source: 'mcp' };
  // A model's tool call: the hub runs only what the owner's run policy allows (else a `refused` error).
  request.origin = 'mcp';
  request.label ??= presetName ? `mcp: ${presetName}` : `mcp: ${[request.command, ...(request.args ?? [])].join(' ')}`.slice(0, 200);
  return (await client.submit(request)).id;
}

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
    signal?.addEventListener('abort', () => finish(), { once: true });
    task.result.catch((error: unknown) => {
      if (error instanceof HubLostError) finish(error);
    });
    task.on('update', () => look(task.snapshot()));
    look(task.snapshot());
  });
}

export interface ToolContext {
  /** The one client: the same calls and handles as every other front-end (src/client). */
  client: BackchannelClient;
  /** Remembers a task started by this session (progress notifications, elicitation of its questions). */
  track(taskId: string, progressToken?: string | number): void;
  /** True when this session puts the task's questions to the client itself (elicitation). */
  elicits(task: TaskSnapshot): boolean;
  /** Sends a progress notification for `task` to the request's progress token. */
  progress(token: string | number | undefined, task: TaskSnapshot): void;
}

export function registerTools(server: McpServer, context: ToolContext): void {
  const { client } = context;

  server.registerTool(
    'start_task',
    {
      title: 'Start a background sub-agent',
      description:
        'Starts a sub-agent in the background and returns its task_id at once, without waiting. ' +
        'Use it for long work (analyses, refactors, other AI agents); collect the result later with wait_for_task or get_task.',
      inputSchema: START_SHAPE,
    },
    async (args) => {
      const id = await startTask(client, args as StartArgs);
      context.track(id);
      return jsonResult({ task_id: id, state: 'queued', next: 'call wait_for_task with this task_id to collect the result' });
    },
  );

  server.registerTool(
    'get_task',
    {
      title: 'Get a task',
      description:
        "A task's current state without waiting: progress, its last partial output, a pending question, the result or the failure.",
      inputSchema: { task_id: TASK_ID },
      annotations: { readOnlyHint: true },
    },
    async ({ task_id }) => {
      const { task } = await client.getTask(await client.resolveId(task_id));
      return jsonResult(summarize(await withWholeResult(client, task)));
    },
  );

  server.registerTool(
    'wait_for_task',
    {
      title: 'Wait for a task',
      description:
        `Waits until the task ends (at most timeout_seconds, default ${DEFAULT_WAIT_SECONDS}, max ${MAX_WAIT_SECONDS}) and returns its result. ` +
        'If it is still running then, returns the progress so far with done=false: call again to keep waiting. ' +
        'If the task asks a question (state shows `question`), answer it with answer_question.',
      inputSchema: {
        task_id: TASK_ID,
        timeout_seconds: z.number().positive().max(MAX_WAIT_SECONDS).optional().describe('How long to wait at most.'),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ task_id, timeout_seconds }, extra) => {
      const id = await client.resolveId(task_id);
      const token = extra._meta?.progressToken;
      const waitMs = (timeout_seconds ?? DEFAULT_WAIT_SECONDS) * 1000;
      const onChange = (t: TaskSnapshot): void => context.progress(token, t);
      const task = await waitForTask(client, id, waitMs, onChange, extra.signal, (t) => !context.elicits(t));
      if (task.pendingQuestion) return jsonResult(summarize(task));
      return isFinished(task.state) ? finalResult(await withWholeResult(client, task)) : jsonResult(summarize(task));
    },
  );

  server.registerTool(
    'list_tasks',
    {
      title: 'List tasks',
      description: 'Lists recent Backchannel tasks (newest first) and the presets start_task can run.',
      inputSchema: {
        state: z
          .enum(STATE_FILTER_NAMES as [StateFilter, ...StateFilter[]])
          .optional()
          .describe('Only tasks in this state.'),
        limit: z.number().int().positive().max(200).optional().describe('At most this many tasks (default 20).'),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ state, limit }) => {
      const keep = (task: TaskSnapshot): boolean => state === undefined || STATE_FILTERS[state](task.state);
      const tasks = (await client.listTasks())
        .filter(keep)
        .reverse()
        .slice(0, limit ?? 20)
        .map(summarize);
      const presets = (await client.info()).presets.map((p) => ({ name: p.name, description: p.description }));
      return jsonResult({ tasks, presets });
    },
  );

  server.registerTool(
    'cancel_task',
    {
      title: 'Cancel a task',
      description: 'Cancels a queued or running task: the sub-agent is asked to stop, then killed after a grace period.',
      inputSchema: { task_id: TASK_ID },
      annotations: { destructiveHint: true },
    },
    async ({ task_id }) => {
      const id = await client.resolveId(task_id);
      await client.cancel(id);
      return jsonResult({ task_id: id, cancelling: true });
    },
  );

  server.registerTool(
    'answer_question',
    {
      title: "Answer a sub-agent's question",
      description: 'Answers the question a running sub-agent asked (get_task or wait_for_task show it under `question`).',
      inputSchema: { task_id: TASK_ID, answer: z.string().describe('The answer text (one of the choices, when it offers some).') },
    },
    async ({ task_id, answer }) => {
      const id = await client.resolveId(task_id);
      const question = (await client.getTask(id)).task.pendingQuestion;
      if (!question) throw new Error(`Task ${id} is not waiting for an answer`);
      await client.answer(id, question.askId, answer);
      return jsonResult({ task_id: id, answered: true });
    },
  );

  server.registerTool(
    'get_task_log',
    {
      title: "Get a task's log",
      description: "The last lines of a task's log: the sub-agent's stdout and stderr and the broker's notes. Useful when a task failed.",
      inputSchema: {
        task_id: TASK_ID,
        lines: z.number().int().positive().max(1000).optional().describe(`How many of the last lines (default ${DEFAULT_LOG_LINES}).`),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ task_id, lines }) => {
      const id = await client.resolveId(task_id);
      const { log } = await client.getTask(id);
      const tail = log.slice(-(lines ?? DEFAULT_LOG_LINES)).map(({ time, stream, text }) => ({ time, stream, text }));
      return jsonResult({ task_id: id, lines: tail });
    },
  );
}
