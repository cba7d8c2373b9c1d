/**
 * The arguments of `start_task` and `run_task`, declared once (`START_SHAPE`, zod): the SDK checks
 * them and publishes their JSON Schema, `StartArgs` is derived from them, and `startTask` maps them
 * onto the bridge's submission. This is the one place the MCP side of the task request lives. The
 * task request itself is one zod/mini schema, TASK_REQUEST (../model/task-request.ts), which the
 * submission is checked against; START_SHAPE still re-declares its fields in MCP's own words
 * (snake_case names, JSON text accepted for objects, presets), and is the piece to derive from it.
 */
import * as z from 'zod';
import type { BackchannelClient, SubmitRequest } from '../client/index.js';

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

/** The budget arguments: the task request's `maxTokens`, `maxCostUsd`, `maxTurns` (enforced by the broker). */
const BUDGET_SHAPE = {
  max_tokens: z.number().int().positive().optional().describe('Budget: stop the task (budget_exceeded) once it reports more tokens.'),
  max_cost_usd: z.number().positive().optional().describe('Budget: stop the task once it reports a cost above this, in US dollars.'),
  max_turns: z.number().int().positive().optional().describe('Budget: stop the task once it reports more model turns.'),
};

export const START_SHAPE = {
  preset: z
    .string()
    .optional()
    .describe('Name of a Backchannel preset to run (see list_tasks → presets). Give either `preset` or `command`.'),
  /** Deprecated: the old name of `preset`, still accepted. */
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
  ...BUDGET_SHAPE,
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
  if (args.input !== undefined) request.input = args.input;
  if (args.label) request.label = args.label;
  if (args.cwd) request.cwd = args.cwd;
  if (args.timeout_seconds) request.timeoutMs = Math.round(args.timeout_seconds * 1000);
  if (args.max_tokens !== undefined) request.maxTokens = args.max_tokens;
  if (args.max_cost_usd !== undefined) request.maxCostUsd = args.max_cost_usd;
  if (args.max_turns !== undefined) request.maxTurns = args.max_turns;
  Object.assign(request, worktreeRequest(args));
  request.tags = { ...tags, source: 'mcp' };
  // A model's tool call: the hub runs only what the owner's run policy allows (else a `refused` error).
  request.origin = 'mcp';
  request.label ??= presetName ? `mcp: ${presetName}` : `mcp: ${[request.command, ...(request.args ?? [])].join(' ')}`.slice(0, 200);
  return (await client.submit(request)).id;
}
