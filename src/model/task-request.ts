/**
 * The task request — what a front-end sends to start a task (the panel's New task, `backchannel run` on
 * a hub, MCP, the gateway) — declared ONCE, as a zod schema. Everything else is derived from it:
 * - the type (`TaskRequest`, the bridge's `SubmitRequest`), and the wire part of `TaskSpec`;
 * - the check (`checkTaskRequest`: a clean copy with only known fields, or one line in the repo's template);
 * - the JSON Schema (`TASK_REQUEST_JSON_SCHEMA`, for MCP tools and docs);
 * - the copy between an in-process `TaskSpec` and a request, both ways (./spec-wire.ts): by the
 *   schema's keys, with the few fields that differ in process named there.
 * Adding an option: one line in `TASK_REQUEST`'s shape (and, only if it differs in process, one entry in
 * spec-wire.ts's `IN_PROCESS`).
 */
import { checkInputSize } from './limits.js';
import {
  boolean,
  describe,
  described,
  expected,
  firstProblem,
  nonNegative,
  oneOf,
  parseOrThrow,
  PLACE,
  text,
  withoutUndefined,
} from './shapes.js';
import * as z from 'zod/mini';
import { TASK_ORIGINS } from './origins.js';
import { TOOL_DEFINITIONS } from './tools.js';

/** Limits on what a front-end may submit; generous, but they keep a bad client from sending megabytes of argv. */
export const MAX_STRING = 4096;
export const MAX_ARGS = 256;
export const MAX_ID = 200;
const MAX_MAP_ENTRIES = 64;
/** An environment variable or tag name: what a shell accepts, plus the `.`/`-` some tools use. */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** A name a request's `env`, `callerEnv` or `tags` may carry (one a shell would accept). */
export function isPlainName(name: string): boolean {
  return NAME.test(name) && name.length <= MAX_ID;
}

/** A task id or ask id. */
export const id = () => text({ max: MAX_ID });

/** A flat `{name: string}` object (environment, tags): bounded, names a shell would accept. */
function stringMap({ maxEntries = MAX_MAP_ENTRIES, maxValue = MAX_STRING } = {}) {
  return z.record(z.string(), text({ allowEmpty: true, max: maxValue }), { error: expected('an object of strings') }).check((ctx) => {
    const names = Object.keys(ctx.value);
    if (names.length > maxEntries) {
      ctx.issues.push({
        code: 'custom',
        input: ctx.value,
        message: `Expected at most ${maxEntries} entries in \`${PLACE}\`, got ${names.length}`,
      });
      return;
    }
    const bad = names.find((name) => !isPlainName(name));
    if (bad !== undefined) {
      ctx.issues.push({
        code: 'custom',
        input: ctx.value,
        message: `Expected the names in \`${PLACE}\` to be like FOO_BAR, got ${describe(bad)}`,
      });
    }
  });
}

/** A whole environment (`callerEnv`): as many variables, and as long, as Linux lets a process have. */
const ENVIRONMENT_LIMITS = { maxEntries: 8192, maxValue: 128 * 1024 };

/** `worktree`: true, or {base?, includeUncommitted?, reuse?}. */
const worktree = z.union(
  [
    boolean(),
    z.strictObject(
      {
        base: z.optional(described(text({ max: 256 }), 'The commit the worktree starts from: a branch, tag or commit (default HEAD)')),
        includeUncommitted: z.optional(described(boolean(), 'Start from the checkout as it is, uncommitted files included')),
        reuse: z.optional(described(id(), 'Continue in the worktree of this earlier task (a follow-up)')),
      },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys' ? `Unexpected \`${PLACE}.${String(issue.keys[0]).slice(0, 40)}\`` : undefined,
      },
    ),
  ],
  { error: expected('true or an object') },
);

/** What a cost cap does to an ACP task: pause and ask to raise it (keeping the session), or stop. */
export const ON_BUDGET = ['pause', 'stop'] as const;
export type OnBudget = (typeof ON_BUDGET)[number];

/**
 * `acp`: true, or {agent?, onBudget?}. Only names and choices: the program, its arguments and its
 * environment are the request's `command`/`args` (judged by the run policy) or a named agent of the
 * owner's config, never a field here (docs/acp.md; docs/reliability.md, fault X1).
 */
const acp = z.union(
  [
    boolean(),
    z.strictObject(
      {
        agent: z.optional(
          described(text({ max: 100 }), 'A named ACP agent of the owner’s config (`acp.agents`), for its environment and stats'),
        ),
        onBudget: z.optional(described(oneOf(ON_BUDGET), 'At the cost cap: pause and ask to raise it (default), or stop')),
      },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys' ? `Unexpected \`${PLACE}.${String(issue.keys[0]).slice(0, 40)}\`` : undefined,
      },
    ),
  ],
  { error: expected('true or an object') },
);

/** `''` for an optional string is "not given" (a form's empty field). */
const optionalText = (description: string) =>
  z.optional(
    z.pipe(
      described(text({ allowEmpty: 'empty' }), description),
      z.transform((value: string) => (value === '' ? undefined : value)),
    ),
  );

const input = z.unknown().check((ctx) => {
  try {
    checkInputSize(ctx.value);
  } catch (error) {
    ctx.issues.push({ code: 'custom', input: ctx.value, message: (error as Error).message });
  }
});

/** A budget's limit: a number above 0. */
const positive = () => {
  const message = expected('a positive finite number');
  return z.number({ error: message }).check(z.positive({ error: message }));
};
const positiveInt = () => {
  const message = expected('a positive integer');
  return z.number({ error: message }).check(z.int({ error: message }), z.positive({ error: message }));
};

const retriesRange = (issue: { input?: unknown }) => `Expected \`${PLACE}\` to be an integer from 0 to 100, got ${String(issue.input)}`;

/** The one declaration. The order of the keys is the order problems are reported in. */
export const TASK_REQUEST = z.object(
  {
    command: described(text(), 'Executable, or a .js/.mjs/.cjs/.ts file run with Node; never a shell string'),
    args: z.optional(
      described(
        z.array(text({ allowEmpty: true }), { error: expected('an array of strings') }).check(
          z.maxLength(MAX_ARGS, {
            error: (issue) => `Expected at most ${MAX_ARGS} \`${PLACE}\`, got ${(issue.input as unknown[]).length}`,
          }),
        ),
        'Arguments of the command',
      ),
    ),
    cwd: optionalText('Working directory (default: the hub’s)'),
    label: optionalText('Shown in the panel and CLI (default: the command line)'),
    input: z.optional(described(input, 'Any JSON value, delivered to the agent as its `input` message')),
    timeoutMs: z.optional(described(nonNegative(), 'Deadline for one attempt, in ms (0: none)')),
    heartbeatTimeoutMs: z.optional(described(nonNegative(), 'No message for this long means stalled, in ms (0: no watchdog)')),
    askTimeoutMs: z.optional(described(nonNegative(), 'How long a question from the agent waits for an answer, in ms')),
    env: z.optional(described(stringMap(), 'Extra environment for the agent, on top of the hub’s filtered environment')),
    callerEnv: z.optional(
      described(
        stringMap(ENVIRONMENT_LIMITS),
        'The submitting front-end’s own environment, to start from instead of the hub’s; never journaled or shown',
      ),
    ),
    tags: z.optional(described(stringMap(), 'Tags shown in the panel and history; `source` says who started the task')),
    origin: z.optional(described(oneOf(TASK_ORIGINS), 'The door the request came through, judged by the run policy (default: control)')),
    taskIdArg: z.optional(described(boolean(), 'false: the command gets no --task-id=<id> argument')),
    worktree: z.optional(described(worktree, 'Run in a git worktree of its own (a coding task)')),
    acp: z.optional(described(acp, 'The command is an ACP agent: Backchannel runs it as its ACP client (docs/acp.md)')),
    parent: z.optional(described(id(), 'The task this one follows up')),
    tools: z.optional(TOOL_DEFINITIONS),
    retries: z.optional(
      described(
        nonNegative().check(z.int({ error: retriesRange }), z.maximum(100, { error: retriesRange })),
        'Extra attempts after the first (0 to 100)',
      ),
    ),
    maxTokens: z.optional(
      described(positiveInt(), 'Budget: cancel the task (reason budget_exceeded) once the agent reports more input+output tokens'),
    ),
    maxCostUsd: z.optional(described(positive(), 'Budget: cancel the task once the agent reports a cost above this, in US dollars')),
    maxTurns: z.optional(described(positiveInt(), 'Budget: cancel the task once the agent reports more model turns')),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? `Expected the request to be an object, got ${describe(issue.input)}` : undefined) },
);

/** What the panel (or any front-end) may start: a command line (never a shell string). */
export type TaskRequest = z.output<typeof TASK_REQUEST>;

/** The request's fields, in the schema's order. */
export const TASK_REQUEST_KEYS = Object.keys(TASK_REQUEST.shape) as readonly (keyof TaskRequest)[];

let jsonSchema: z.core.JSONSchema.BaseSchema | undefined;

/** The JSON Schema of a request (what a client may send), for MCP tools and docs. */
export function taskRequestJsonSchema(): z.core.JSONSchema.BaseSchema {
  jsonSchema ??= z.toJSONSchema(TASK_REQUEST, { io: 'input', unrepresentable: 'any' });
  return jsonSchema;
}

/** A request parsed into a clean copy: only known fields, none left `undefined`. */
export const CLEAN_TASK_REQUEST = z.pipe(TASK_REQUEST, z.transform(withoutUndefined<TaskRequest>));

/** The problem with a request, in one line; undefined when there is none. */
export function taskRequestProblem(value: unknown): string | undefined {
  const parsed = TASK_REQUEST.safeParse(value);
  return parsed.success ? undefined : firstProblem(parsed.error);
}

/**
 * A request checked: a clean copy holding only the known fields (absent ones left out), or throws
 * what `fail` makes of the one-line problem.
 */
export function checkTaskRequest(value: unknown, fail: (message: string) => Error = (message) => new TypeError(message)): TaskRequest {
  return parseOrThrow(CLEAN_TASK_REQUEST, value, fail);
}
