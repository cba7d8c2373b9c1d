/**
 * The arguments of `start_task` and `run_task`, declared once (`START_SHAPE`, zod): the SDK checks
 * them and publishes their JSON Schema, `StartArgs` is derived from them, and `startTask` maps them
 * onto the bridge's submission. The task-request fields among them are not re-declared: each is a row
 * of `FROM_REQUEST`, which takes its JSON Schema and its check from the one task request,
 * TASK_REQUEST (../model/task-request.ts), and adds only MCP's side — its snake_case name, JSON text
 * accepted for objects, a unit (seconds), a narrower type (`input` is an object) and its description.
 * Its problems are the request's one line, naming the MCP argument. Only what a request has no field
 * for is declared here: `preset` (and its old name `template`), and `worktree`/`base`, which are one
 * request field (`worktree: true | {base}`) as two arguments.
 */
import * as z from 'zod';
import * as zm from 'zod/mini';
import type { BackchannelClient, SubmitRequest } from '../client/index.js';
import { TASK_REQUEST, type TaskRequest } from '../model/task-request.js';
import { derivedArgument, type ArgumentMapping } from './derived-args.js';

type RequestShape = typeof TASK_REQUEST.shape;

/** Each start argument that is a request field, and that field (`timeout_seconds` → `timeoutMs`). */
const REQUEST_FIELD = new Map<string, keyof TaskRequest>();

/** One start argument from a request field (./derived-args.ts), remembered for `startTask`. */
function fromRequest<K extends keyof RequestShape>(name: string, row: ArgumentMapping & { field: K }) {
  REQUEST_FIELD.set(name, row.field);
  return derivedArgument(name, TASK_REQUEST.shape[row.field] as zm.ZodMiniType<zm.output<RequestShape[K]>>, row);
}

/**
 * The start arguments that are task-request fields: MCP's name → the field, and MCP's side of it. Their
 * values are the field's (already in its unit) and go onto the submission as they are.
 */
const FROM_REQUEST = {
  command: fromRequest('command', {
    field: 'command',
    description: 'Executable or script to run as the sub-agent (a .js/.mjs/.ts file runs with Node). Not a shell string.',
  }),
  args: fromRequest('args', { field: 'args', json: true, description: 'Arguments for `command`.' }),
  input: fromRequest('input', {
    field: 'input',
    json: true,
    narrower: {
      schema: zm.record(zm.string(), zm.unknown()),
      jsonSchema: { type: 'object', additionalProperties: {} },
      message: 'must be a JSON object, e.g. {"prompt": "…"}',
    },
    description: 'A JSON object handed to the sub-agent as its task input (e.g. {"prompt": "…"}).',
  }),
  label: fromRequest('label', { field: 'label', description: 'Short name shown in the task list and the panel.' }),
  cwd: fromRequest('cwd', { field: 'cwd', description: 'Working directory (absolute path). Default: where the Backchannel hub runs.' }),
  timeout_seconds: fromRequest('timeout_seconds', {
    field: 'timeoutMs',
    scale: 1000,
    narrower: {
      schema: zm.number().check(zm.positive()),
      jsonSchema: { type: 'number', exclusiveMinimum: 0 },
      message: 'must be a positive number of seconds',
    },
    description: 'Fail the task as "timeout" after this many seconds.',
  }),
  max_tokens: fromRequest('max_tokens', {
    field: 'maxTokens',
    description: 'Budget: stop the task (budget_exceeded) once it reports more tokens.',
  }),
  max_cost_usd: fromRequest('max_cost_usd', {
    field: 'maxCostUsd',
    description: 'Budget: stop the task once it reports a cost above this, in US dollars.',
  }),
  max_turns: fromRequest('max_turns', { field: 'maxTurns', description: 'Budget: stop the task once it reports more model turns.' }),
};

/** The worktree arguments of the start tools (docs/coding-agents.md; the change tools are in ./change-tools.ts). */
const WORKTREE_SHAPE = {
  worktree: z
    .boolean()
    .optional()
    .describe(
      'Run the sub-agent in a git worktree of its own (a new branch from `base` of the repository containing cwd), ' +
        "never in the user's checkout. Its change is then the result: get_task_diff, apply_task_change, discard_task_change.",
    ),
  base: z.string().optional().describe('With worktree: the branch, tag or commit to start from. Default: HEAD.'),
};

export const START_SHAPE = {
  preset: z
    .string()
    .optional()
    .describe('Name of a Backchannel preset to run (see list_tasks → presets). Give either `preset` or `command`.'),
  /** Deprecated: the old name of `preset`, still accepted. */
  template: z.string().optional().describe('Deprecated: the old name of `preset`.'),
  ...FROM_REQUEST,
  ...WORKTREE_SHAPE,
};

/**
 * The annotations of `start_task` and `run_task`: the sub-agent is an arbitrary program run in `cwd` (the user's
 * checkout unless `worktree`), which may change or delete files and call remote models; each call starts a new one.
 */
export const START_ANNOTATIONS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true } as const;

/** start_task's and run_task's arguments, as the SDK hands them over (parsed). */
export type StartArgs = z.infer<z.ZodObject<typeof START_SHAPE>>;

const START_ARGS = z.object(START_SHAPE);

/**
 * A call's arguments as the client sent them, parsed as the SDK parses a tool's (JSON text of `input` and `args`
 * becomes their value): for `run_task`'s MCP-task path, where the task store gets the request's raw arguments.
 */
export function parseStartArgs(value: unknown): StartArgs {
  return START_ARGS.parse(value);
}

/** `worktree` and `base` as a submission's `worktree`. */
function worktreeRequest(args: Pick<StartArgs, 'worktree' | 'base'>): { worktree?: true | { base: string } } {
  if (args.base !== undefined && !args.worktree) throw new Error('`base` needs `worktree: true`');
  if (!args.worktree) return {};
  return { worktree: args.base === undefined ? true : { base: args.base } };
}

/** Submits a task from the tools' arguments (with `tags` besides the source); returns its id. */
export async function startTask(
  client: Pick<BackchannelClient, 'info' | 'submit'>,
  args: StartArgs,
  tags: Record<string, string> = {},
): Promise<string> {
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
  // The other request fields, as they are: the argument's value is already the field's (its unit, its check).
  for (const [name, field] of REQUEST_FIELD) {
    const value = (args as Record<string, unknown>)[name];
    if (name !== 'command' && name !== 'args' && value !== undefined) (request as Record<string, unknown>)[field] = value;
  }
  Object.assign(request, worktreeRequest(args));
  request.tags = { ...tags, source: 'mcp' };
  // A model's tool call: the hub runs only what the owner's run policy allows (else a `refused` error).
  request.origin = 'mcp';
  request.label ??= presetName ? `mcp: ${presetName}` : `mcp: ${[request.command, ...(request.args ?? [])].join(' ')}`.slice(0, 200);
  return (await client.submit(request)).id;
}
