/**
 * Gateway configuration: the YAML file (default `~/.backchannel/config.yaml`, optional) turned into a
 * validated `GatewayConfig`. Every field has a default, so the gateway starts with no file at all.
 *
 * ```yaml
 * port: 8976
 * api_key: change-me            # clients send `Authorization: Bearer change-me` or `x-api-key: change-me`
 * auth: key                     # no api_key: a generated key in the user's config dir (`none`: no key)
 * default_model: cursor-cli     # used when a request names no model
 * request_timeout_ms: 300000    # whole request, queue wait included → 504
 * max_concurrent: 5             # more requests wait in the queue, none is dropped
 * cursor_cli_path: agent        # else $CURSOR_AGENT_BIN, else `agent` on PATH
 * workspace: ~/project          # working directory of agent-mode agents (default: where the gateway started)
 * max_queued: 20                # more waiting requests → 429 with Retry-After
 * max_connections: 64           # open client connections
 * body_timeout_ms: 30000        # a request body must arrive within this (408)
 * background_keep_ms: 600000    # a background response is kept this long after it ended (./background/)
 * env_allow: [MY_TOKEN]         # variables agents inherit beyond the minimal set (own broker only)
 * side_requests: local          # title/summary requests: `local` (answered without an agent), `run`, or a model name
 * client_system_prompt: auto    # `auto` (long ones summarised), `keep`, `drop`
 * sessions: { max: 32, idle_ms: 900000 }
 * session_workspaces: false     # true: each session's agent runs in its own scratch directory
 * workspaces_dir: ~/.local/state/backchannel/gateway-workspaces   # where scratch directories are made
 *                               # (bridge mode's agents always run in one: never in `workspace`)
 * models:
 *   cursor-cli: {}              # the cursor-cli template with the CLI's own default model
 *   sonnet: { cli_model: sonnet-4.5 }
 *   claude: { agent: claude-code, cli_model: sonnet }
 *   my-agent: { command: node, args: [./my-agent.mjs], env: { FOO: bar } }
 *   capped: { agent: claude-code, budget: { max_tokens: 200000, max_cost_usd: 2, max_turns: 30 } }
 *   coder: { agent: claude-code, allow_writes: true, cwd: ~/project, worktree: true, base: main }
 *                               # each session in a git worktree of its own (docs/gateway.md)
 *   bridged: { agent: claude-code, mode: bridge }
 *   acp-claude: { command: claude-agent-acp, acp: true, mode: bridge }   # an ACP agent (./acp-model.ts)
 *                               # `bridge` (default when a request offers tools): the agent calls the
 *                               # client's tools; `agent`: its own tools only; `plan`: text only
 * ```
 *
 * `loadGatewayConfig` is the one function that reads it; the schema is `resolveGatewayConfig`.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { planNewWorktree } from '../client/index.js';
import { ConfigError, readTrustedFile } from '../config/file.js';
import { defaultDataDir } from '../paths/data-dir.js';
import { readOrCreateSecret } from '../loopback/secret-file.js';
import * as z from 'zod/mini';
import { firstProblem, PLACE } from '../model/shapes.js';
import type { TaskBudget } from '../model/usage.js';

/** The port in the issue and the docs; any free port works (`0` picks one). */
export const DEFAULT_PORT = 8976;
/** Long agent runs (whole-repo analyses) take minutes; longer than this is more likely a hang. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5 * 60_000;
/** Users report rate limits above ~3 simultaneous headless Cursor runs; 5 leaves room for other agents. */
export const DEFAULT_MAX_CONCURRENT = 5;
/** Name of the model that runs the cursor-cli template when nothing is configured. */
export const DEFAULT_MODEL = 'cursor-cli';
/** `agent --list-models` normally answers in well under a second; /v1/models must not hang on it. */
export const DEFAULT_CLI_MODELS_TIMEOUT_MS = 3000;

/** A request body must arrive within this long after its headers (a stalled body holds memory). */
export const BODY_TIMEOUT_MS = 30_000;
/** How long an ended background response can be retrieved: the Responses API keeps one about 10 minutes. */
export const BACKGROUND_KEEP_MS = 600_000;
/** Requests that may wait for a slot before new ones get 429: a burst, not a backlog. */
export const DEFAULT_MAX_QUEUED = 20;
/** Open client connections; more are closed at once (each idle one costs a socket and buffers). */
export const DEFAULT_MAX_CONNECTIONS = 64;
/** The design's session registry: 32 sessions, 15 minutes idle. */
export const DEFAULT_MAX_SESSIONS = 32;
export const DEFAULT_SESSION_IDLE_MS = 15 * 60_000;
/** Client system prompts longer than this describe the client's own tools; `auto` summarises them. */
export const LONG_SYSTEM_PROMPT_CHARS = 2000;
/**
 * What sub-agents of the gateway's own broker inherit by default: a working shell and locale, and
 * the credentials of the agent CLIs the built-in templates run. Everything else (cloud keys, tokens)
 * stays with the gateway unless `env_allow` names it.
 */
export const DEFAULT_ENV_ALLOW = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'TMPDIR',
  'TZ',
  'LANG',
  'LC_*',
  'XDG_*',
  'NODE_OPTIONS',
  'CURSOR_API_KEY',
  'CURSOR_AGENT_BIN',
  'CLAUDE_*',
  'ANTHROPIC_*',
];

/**
 * The built-in agents a model can be served by: the agents of the shipped templates of these names
 * (a model's config says `agent: <name>`, the name of the shipped template whose agent runs;
 * `template:` is its old name, still accepted).
 */
export type BuiltInAgent = 'cursor-cli' | 'claude-code';

/**
 * How a model treats the tools a request offers (docs/gateway.md, "Bridge mode"): `bridge` offers
 * them to the agent and its calls become the client's tool calls; `agent` keeps the agent on its own
 * tools; `plan` asks for text only. Unset: `bridge` when the request offers tools, else `agent`.
 */
export type ModelMode = 'bridge' | 'agent' | 'plan';
export const MODEL_MODES = ['bridge', 'agent', 'plan'] as const satisfies readonly ModelMode[];

/**
 * A model whose sessions each run in a git worktree of their own (`worktree: true`): made by the
 * broker from `base` of the repository containing the model's working directory, reused by the
 * session's later turns (follow-ups), its change recorded as for any coding task.
 */
export interface GatewayWorktree {
  /** The base the worktree starts from. @default HEAD of the repository */
  base?: string;
  /** The repository (its top level), as found at config load. */
  repo: string;
}

/** How one model name is served. */
export type ModelRoute =
  | {
      kind: BuiltInAgent;
      /** `--model` for the CLI; absent = the CLI's own default. */
      cliModel?: string;
      /** Passes `--force` (commands and writes without approval). @default false */
      allowWrites: boolean;
      env: Record<string, string>;
      cwd?: string;
      description?: string;
      worktree?: GatewayWorktree;
      /** Unset: `bridge` when the request offers tools, else `agent`. */
      mode?: ModelMode;
      /** The budget of each task of this model (`budget:`). */
      budget?: TaskBudget;
    }
  | {
      kind: 'command';
      command: string;
      args: string[];
      /** The command is an ACP agent, run under the ACP adapter (`acp: true`; ./acp-model.ts, docs/acp.md). */
      acp?: true;
      /** `input.model` for the agent; absent = the agent's own default (the request's model name is not it). */
      cliModel?: string;
      /** `input.allow_writes` for the agent. @default false */
      allowWrites: boolean;
      env: Record<string, string>;
      cwd?: string;
      description?: string;
      worktree?: GatewayWorktree;
      /** Unset: `bridge` when the request offers tools, else `agent`. */
      mode?: ModelMode;
      /** The budget of each task of this model (`budget:`). */
      budget?: TaskBudget;
    };

export interface GatewayConfig {
  /** 0 picks a free port. @default 8976 */
  port: number;
  /** Key clients must send; absent = no key needed (`auth: none`, or a config made in code). */
  apiKey?: string;
  /** Where a generated key lives (set by `loadGatewayConfig` with `auth: key` and no `api_key`). */
  keyFile?: string;
  /** The key was generated by this load: the banner prints it once. */
  keyCreated?: boolean;
  /** `auth: none` turns the generated key off. @default 'key' */
  auth: 'key' | 'none';
  /** @default 20 */
  maxQueued: number;
  /** @default 64 */
  maxConnections: number;
  /** @default 30000 */
  bodyTimeoutMs: number;
  /** How long an ended background response can be retrieved (`background_keep_ms`). @default BACKGROUND_KEEP_MS */
  backgroundKeepMs: number;
  /** Variable patterns agents inherit (own broker). @default DEFAULT_ENV_ALLOW plus `env_allow` */
  envAllow: string[];
  /** Title/summary side requests. @default 'local' */
  sideRequests: 'local' | 'run' | { model: string };
  /** @default 'auto' */
  clientSystemPrompt: 'auto' | 'keep' | 'drop';
  sessions: { max: number; idleMs: number };
  /**
   * Root of the private scratch directories (`workspaces_dir`): every session's own with
   * `session_workspaces: true`, and always where bridge mode's agents run (docs/gateway.md).
   * @default <data dir>/gateway-workspaces
   */
  workspacesDir: string;
  /** Each session's agent (any mode) runs in a scratch directory of its own (`session_workspaces`). @default false */
  sessionWorkspaces: boolean;
  /** Model used when a request has no `model`. @default 'cursor-cli' */
  defaultModel: string;
  /** @default 300000 */
  requestTimeoutMs: number;
  /** @default 5 */
  maxConcurrent: number;
  /** The Cursor CLI executable. @default cursor_cli_path, else $CURSOR_AGENT_BIN, else 'agent' */
  cursorCliPath: string;
  /** Working directory of the agents. @default process.cwd() */
  workspace: string;
  models: Record<string, ModelRoute>;
  /** Offer (and accept) the Cursor CLI's own model names too. @default true */
  listCliModels: boolean;
  /** @default 3000 */
  cliModelsTimeoutMs: number;
  /** The file this came from, if any. */
  source?: string;
}

export class GatewayConfigError extends Error {
  override readonly name = 'GatewayConfigError';
}

/** `~/.backchannel/config.yaml`. */
export function defaultConfigPath(): string {
  return path.join(homedir(), '.backchannel', 'config.yaml');
}

/** `$XDG_CONFIG_HOME/backchannel/gateway-key` (else `~/.config/…`): the generated key, mode 0600. */
export function defaultKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = nonEmpty(env.XDG_CONFIG_HOME) ?? path.join(homedir(), '.config');
  return path.join(base, 'backchannel', 'gateway-key');
}

/** A built-in agent's entry point: its template's agent.mjs (src|dist/gateway → ../../templates). */
export function builtInAgentPath(name: BuiltInAgent): string {
  return fileURLToPath(new URL(`../../templates/${name}/agent.mjs`, import.meta.url));
}

/** The cursor-cli agent's entry point. */
export function cursorAgentPath(): string {
  return builtInAgentPath('cursor-cli');
}

/** The generated key (`readOrCreateSecret`): a file another user could read or write is refused. */
export function readOrCreateKey(file: string): { key: string; created: boolean } {
  try {
    const { secret, created } = readOrCreateSecret(file, 'bc-');
    return { key: secret, created };
  } catch (error) {
    // The file's own problem (another user's, readable by others, empty): the other way out is api_key.
    if (error instanceof Error && !('code' in error)) throw new GatewayConfigError(`${error.message}, or set api_key`);
    throw error;
  }
}

/**
 * Reads and validates a config file. A missing file at the default path means "all defaults"; a
 * missing file the caller named explicitly is an error (a typo should not silently run defaults).
 * A file another user could have written is refused (`readTrustedFile`).
 */
export function loadGatewayConfig(file?: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const target = file ?? defaultConfigPath();
  let config: GatewayConfig;
  if (!existsSync(target)) {
    if (file !== undefined) throw new GatewayConfigError(`config file not found: ${file}`);
    config = resolveGatewayConfig({}, env);
  } else {
    let raw: unknown;
    try {
      raw = parseYaml(readTrustedFile(target));
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new GatewayConfigError(`cannot read ${target}: ${(error as Error).message}`);
    }
    config = inFile(target, () => resolveGatewayConfig(raw ?? {}, env, path.dirname(target)));
    config.source = path.resolve(target);
  }
  return withKey(config, env);
}

/**
 * The `gateway:` section of the one config file (src/config/file.ts) as a config: the same schema
 * and the same key rule as a file of its own.
 */
export function gatewayConfigFromSection(section: unknown, file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const config = inFile(file, () => resolveGatewayConfig(section, env, path.dirname(file), 'gateway'));
  config.source = `${file} (gateway section)`;
  return withKey(config, env);
}

/** A config's problem names the file it is in: `config.yaml: Expected \`gateway.port\` to be …`. */
function inFile<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof GatewayConfigError) throw new GatewayConfigError(`${file}: ${error.message}`, { cause: error });
    throw error;
  }
}

/**
 * Safe by default on a machine with other users (they reach 127.0.0.1 too): without `api_key`, the
 * generated key is required unless the owner wrote `auth: none`.
 */
function withKey(config: GatewayConfig, env: NodeJS.ProcessEnv): GatewayConfig {
  if (config.apiKey === undefined && config.auth === 'key') {
    const keyFile = nonEmpty(env.BACKCHANNEL_GATEWAY_KEY_FILE) ?? defaultKeyFile(env);
    const { key, created } = readOrCreateKey(keyFile);
    Object.assign(config, { apiKey: key, keyFile, keyCreated: created });
  }
  return config;
}

/** A value as the gateway's messages quote it: `eighty` (string), `[1]` (list). */
function describe(value: unknown): string {
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\` (${Array.isArray(value) ? 'list' : typeof value})`;
}

const expect = (what: string) => (issue: { input?: unknown }) => `Expected \`${PLACE}\` to be ${what}, got ${describe(issue.input)}`;

/** The shape's leaves, each with its message; `null` is "not set" everywhere, as an absent key. */
const leaf = {
  integer(min: number, max = Number.MAX_SAFE_INTEGER) {
    const error = expect(`an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`);
    return z.nullish(z.number({ error }).check(z.int({ error }), z.minimum(min, { error }), z.maximum(max, { error })));
  },
  boolean: () => z.nullish(z.boolean({ error: expect('true or false') })),
  positive() {
    const error = expect('a positive number');
    return z.nullish(z.number({ error }).check(z.positive({ error })));
  },
  string(...checks: z.core.$ZodCheck<string>[]) {
    const error = expect('a non-empty string');
    return z.nullish(
      z.string({ error }).check(
        z.refine((value: string) => value.trim() !== '', { error }),
        ...checks,
      ),
    );
  },
  oneOf: <const T extends readonly [string, ...string[]]>(choices: T) =>
    z.nullish(z.enum(choices, { error: expect(`one of ${choices.join(', ')}`) })),
  /** Variable names (`*` is a wildcard), none empty. */
  names() {
    const error = () => `Expected \`${PLACE}\` to be a list of names (\`*\` is a wildcard)`;
    const names = z
      .array(z.unknown(), { error })
      .check(z.refine((list) => list.every((v) => typeof v === 'string' && v !== ''), { error }));
    return z.nullish(
      z.pipe(
        names,
        z.transform((list) => list as string[]),
      ),
    );
  },
  /** `{NAME: value}`; numbers and booleans are written as strings (`LEVEL: 3`). */
  stringMap() {
    const value = z.pipe(z.union([z.string(), z.number(), z.boolean()], { error: expect('a string') }), z.transform(String));
    return z.nullish(z.record(z.string(), value, { error: () => `Expected \`${PLACE}\` to be a mapping of names to strings` }));
  },
};

/** A mapping's unknown keys, all of them, with the ones it knows. */
const unknownKeys = (lead: (place: string) => string, known: readonly string[]) => (issue: z.core.$ZodRawIssue) =>
  issue.code === 'unrecognized_keys' ? `${lead(PLACE)}: ${issue.keys.join(', ')} (known: ${known.join(', ')})` : undefined;

/** A built-in agent's name (`agent:`, or `template:`, its old name). */
const builtInAgent = () =>
  leaf.string(
    z.refine((name: string) => name === 'cursor-cli' || name === 'claude-code', {
      error: () => `\`${PLACE}\`: "cursor-cli" and "claude-code" are built in; use \`command\` for other agents`,
    }),
  );

const MODEL_SHAPE = {
  agent: builtInAgent(),
  template: builtInAgent(),
  cli_model: leaf.string(),
  allow_writes: leaf.boolean(),
  command: leaf.string(),
  args: z.nullish(z.array(z.string(), { error: () => `\`${PLACE}\` must be a list of strings` })),
  env: leaf.stringMap(),
  cwd: leaf.string(),
  description: leaf.string(),
  worktree: leaf.boolean(),
  base: leaf.string(),
  mode: leaf.oneOf(MODEL_MODES),
  /** `command` is an ACP agent: Backchannel runs it as its ACP client (./acp-model.ts). */
  acp: leaf.boolean(),
  /** `{max_tokens, max_cost_usd, max_turns}`: the budget of each of the model's tasks (src/broker/guards/budget.ts). */
  budget: z.nullish(
    z.strictObject(
      { max_tokens: leaf.integer(1), max_cost_usd: leaf.positive(), max_turns: leaf.integer(1) },
      {
        error: (issue) =>
          unknownKeys((place) => `unknown key(s) in \`${place}\``, ['max_tokens', 'max_cost_usd', 'max_turns'])(issue) ??
          `\`${PLACE}\` must be a mapping of limits (max_tokens, max_cost_usd, max_turns)`,
      },
    ),
  ),
};

/** One model: `{}` (or nothing) for the defaults of the cursor-cli template. */
const MODEL = z.nullish(
  z.strictObject(MODEL_SHAPE, {
    error: (issue) =>
      unknownKeys((place) => `unknown key(s) in \`${place}\``, Object.keys(MODEL_SHAPE))(issue) ??
      `\`${PLACE}\` must be a mapping (or {} for the defaults)`,
  }),
);

const SESSIONS = z.nullish(
  z.strictObject(
    { max: leaf.integer(0), idle_ms: leaf.integer(1) },
    {
      error: (issue) =>
        unknownKeys((place) => `unknown key(s) in \`${place}\``, ['max', 'idle_ms'])(issue) ??
        `\`${PLACE}\` must be a mapping: { max: 32, idle_ms: 900000 }`,
    },
  ),
);

const GATEWAY_SHAPE = {
  port: leaf.integer(0, 65535),
  api_key: leaf.string(),
  default_model: leaf.string(),
  request_timeout_ms: leaf.integer(1),
  max_concurrent: leaf.integer(1),
  cursor_cli_path: leaf.string(),
  workspace: leaf.string(),
  models: z.nullish(z.record(z.string(), MODEL, { error: () => `\`${PLACE}\` must be a mapping of model name → settings` })),
  list_cli_models: leaf.boolean(),
  cli_models_timeout_ms: leaf.integer(1),
  auth: leaf.oneOf(['key', 'none']),
  max_queued: leaf.integer(0),
  max_connections: leaf.integer(1),
  body_timeout_ms: leaf.integer(1),
  background_keep_ms: leaf.integer(1),
  env_allow: leaf.names(),
  side_requests: leaf.string(),
  client_system_prompt: leaf.oneOf(['auto', 'keep', 'drop']),
  sessions: SESSIONS,
  session_workspaces: leaf.boolean(),
  workspaces_dir: leaf.string(),
};

/** The gateway's config in the file's shape (snake_case keys): every key, its type and its message. */
export const GATEWAY_CONFIG = z.strictObject(GATEWAY_SHAPE, {
  error: (issue) =>
    unknownKeys(() => 'unknown config key(s)', Object.keys(GATEWAY_SHAPE))(issue) ??
    (issue.code === 'invalid_type' ? 'the config must be a mapping (key: value lines)' : undefined),
});

type RawGateway = z.output<typeof GATEWAY_CONFIG>;
type RawModel = NonNullable<z.output<typeof MODEL>>;

/**
 * Validates a config object in the file's shape (snake_case keys) and fills in defaults.
 * Relative paths (workspace, model cwd, command) are resolved against `baseDir`. `section`: the
 * place of the config in its file (`gateway`), named in messages before each field.
 */
export function resolveGatewayConfig(
  raw: unknown,
  env: NodeJS.ProcessEnv = process.env,
  baseDir = process.cwd(),
  section?: string,
): GatewayConfig {
  const parsed = z.safeParse(GATEWAY_CONFIG, raw);
  if (!parsed.success) throw new GatewayConfigError(firstProblem(parsed.error, section));
  const o: RawGateway = parsed.data;
  const place = (field: string) => (section === undefined ? field : `${section}.${field}`);
  const workspace = expandPath(o.workspace ?? process.cwd(), baseDir);
  const config: GatewayConfig = {
    port: o.port ?? DEFAULT_PORT,
    defaultModel: o.default_model ?? DEFAULT_MODEL,
    requestTimeoutMs: o.request_timeout_ms ?? DEFAULT_REQUEST_TIMEOUT_MS,
    maxConcurrent: o.max_concurrent ?? DEFAULT_MAX_CONCURRENT,
    cursorCliPath: o.cursor_cli_path ?? nonEmpty(env.CURSOR_AGENT_BIN) ?? 'agent',
    workspace,
    models: {},
    listCliModels: o.list_cli_models ?? true,
    cliModelsTimeoutMs: o.cli_models_timeout_ms ?? DEFAULT_CLI_MODELS_TIMEOUT_MS,
    auth: o.auth ?? 'key',
    maxQueued: o.max_queued ?? DEFAULT_MAX_QUEUED,
    maxConnections: o.max_connections ?? DEFAULT_MAX_CONNECTIONS,
    bodyTimeoutMs: o.body_timeout_ms ?? BODY_TIMEOUT_MS,
    backgroundKeepMs: o.background_keep_ms ?? BACKGROUND_KEEP_MS,
    envAllow: [...DEFAULT_ENV_ALLOW, ...(o.env_allow ?? [])],
    sideRequests: sideRequests(o.side_requests),
    clientSystemPrompt: o.client_system_prompt ?? 'auto',
    sessions: { max: o.sessions?.max ?? DEFAULT_MAX_SESSIONS, idleMs: o.sessions?.idle_ms ?? DEFAULT_SESSION_IDLE_MS },
    workspacesDir: o.workspaces_dir == null ? path.join(defaultDataDir(env), 'gateway-workspaces') : expandPath(o.workspaces_dir, baseDir),
    sessionWorkspaces: o.session_workspaces === true,
  };
  for (const [name, entry] of Object.entries(o.models ?? {}))
    config.models[name] = modelRoute(entry ?? {}, place(`models.${name}`), baseDir);
  if (o.api_key != null) config.apiKey = o.api_key;
  for (const [name, route] of Object.entries(config.models)) if (route.worktree) checkWorktree(place(`models.${name}`), route, workspace);
  if (config.cursorCliPath.includes('/')) config.cursorCliPath = expandPath(config.cursorCliPath, baseDir);
  if (Object.keys(config.models).length === 0) config.models[DEFAULT_MODEL] = { kind: 'cursor-cli', allowWrites: false, env: {} };
  return config;
}

function budgetOfConfig(raw: { max_tokens?: number | null; max_cost_usd?: number | null; max_turns?: number | null }): TaskBudget {
  const budget: TaskBudget = {};
  if (raw.max_tokens != null) budget.maxTokens = raw.max_tokens;
  if (raw.max_cost_usd != null) budget.maxCostUsd = raw.max_cost_usd;
  if (raw.max_turns != null) budget.maxTurns = raw.max_turns;
  return budget;
}

/** How one model is served: a command of its own, or a built-in agent (the cursor-cli one by default). */
function modelRoute(e: RawModel, where: string, baseDir: string): ModelRoute {
  if (e.agent != null && e.template != null)
    throw new GatewayConfigError(`\`${where}\`: \`template\` is the old name of \`agent\`; give only \`agent\``);
  // The key the user wrote names the agent in the messages.
  const agentKey = e.template != null ? 'template' : 'agent';
  const agent = (e.agent ?? e.template) as BuiltInAgent | null | undefined;
  if (e.command != null && agent != null)
    throw new GatewayConfigError(`\`${where}\`: give either \`command\` or \`${agentKey}\`, not both`);
  if (e.worktree !== true && e.base != null)
    throw new GatewayConfigError(`\`${where}.base\` is the base of a worktree: add \`worktree: true\`, or remove it`);
  const shared = {
    allowWrites: e.allow_writes ?? false,
    ...(e.cli_model ? { cliModel: e.cli_model } : {}),
    env: e.env ?? {},
    ...(e.cwd ? { cwd: expandPath(e.cwd, baseDir) } : {}),
    ...(e.description ? { description: e.description } : {}),
    ...(e.mode != null ? { mode: e.mode } : {}),
    ...(e.budget ? { budget: budgetOfConfig(e.budget) } : {}),
    // The repository is found by `checkWorktree` once the workspace is known.
    ...(e.worktree === true ? { worktree: { repo: '', ...(e.base != null ? { base: e.base } : {}) } } : {}),
  };
  if (e.acp === true && e.command == null)
    throw new GatewayConfigError(`\`${where}.acp\` says \`command\` is an ACP agent: add \`command\` (the agent's program)`);
  if (e.command != null) {
    const command = e.command.includes('/') ? expandPath(e.command, baseDir) : e.command;
    return { kind: 'command', command, args: e.args ?? [], ...shared, ...(e.acp === true ? { acp: true as const } : {}) };
  }
  return { kind: agent ?? 'cursor-cli', ...shared };
}

/**
 * A `worktree: true` model's repository, checked now as the broker checks a coding task (a git
 * repository around the model's `cwd`, else the `workspace`; an existing base), so that a bad config
 * stops the gateway with one line instead of failing every request.
 */
function checkWorktree(where: string, route: ModelRoute, workspace: string): void {
  const cwd = route.cwd ?? workspace;
  const dir = route.cwd === undefined ? `its workspace ${cwd}` : `its cwd ${cwd}`;
  try {
    const plan = planNewWorktree(cwd, route.worktree!.base === undefined ? {} : { base: route.worktree!.base });
    route.worktree!.repo = plan.repo;
  } catch (error) {
    throw new GatewayConfigError(
      `\`${where}\` has \`worktree: true\`, but ${dir} cannot have one: ${(error as Error).message}. Point \`cwd\` (or \`workspace\`) at a git repository.`,
    );
  }
}

function sideRequests(text: string | null | undefined): GatewayConfig['sideRequests'] {
  const value = text ?? 'local';
  return value === 'local' || value === 'run' ? value : { model: value };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value : undefined;
}

function expandPath(value: string, baseDir: string): string {
  const home = value === '~' || value.startsWith('~/') ? path.join(homedir(), value.slice(1)) : value;
  return path.resolve(baseDir, home);
}
