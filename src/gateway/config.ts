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
 * workspace: ~/project          # working directory of the agents (default: where the gateway started)
 * max_queued: 20                # more waiting requests → 429 with Retry-After
 * max_connections: 64           # open client connections
 * body_timeout_ms: 30000        # a request body must arrive within this (408)
 * env_allow: [MY_TOKEN]         # variables agents inherit beyond the minimal set (own broker only)
 * side_requests: local          # title/summary requests: `local` (answered without an agent), `run`, or a model name
 * client_system_prompt: auto    # `auto` (long ones summarised), `keep`, `drop`
 * sessions: { max: 32, idle_ms: 900000 }
 * session_workspaces: false     # true: each session's agent runs in its own scratch directory
 * workspaces_dir: ~/.local/state/backchannel/gateway-workspaces
 * models:
 *   cursor-cli: {}              # the cursor-cli template with the CLI's own default model
 *   sonnet: { cli_model: sonnet-4.5 }
 *   claude: { template: claude-code, cli_model: sonnet }
 *   my-agent: { command: node, args: [./my-agent.mjs], env: { FOO: bar } }
 *   coder: { template: claude-code, allow_writes: true, cwd: ~/project, worktree: true, base: main }
 *                               # each session in a git worktree of its own (docs/gateway.md)
 * ```
 *
 * `loadGatewayConfig` is the one function that reads it; the schema is `resolveGatewayConfig`.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { planNewWorktree } from '../broker/worktree/worktrees.js';
import { ConfigError, readTrustedFile } from '../config/file.js';
import { defaultDataDir } from '../paths/data-dir.js';

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
 * (a model's config says `template: <name>`, the name of the template whose agent runs).
 */
export type BuiltInAgent = 'cursor-cli' | 'claude-code';

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
    }
  | {
      kind: 'command';
      command: string;
      args: string[];
      /** `input.model` for the agent; absent = the agent's own default (the request's model name is not it). */
      cliModel?: string;
      /** `input.allow_writes` for the agent. @default false */
      allowWrites: boolean;
      env: Record<string, string>;
      cwd?: string;
      description?: string;
      worktree?: GatewayWorktree;
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
  /** Variable patterns agents inherit (own broker). @default DEFAULT_ENV_ALLOW plus `env_allow` */
  envAllow: string[];
  /** Title/summary side requests. @default 'local' */
  sideRequests: 'local' | 'run' | { model: string };
  /** @default 'auto' */
  clientSystemPrompt: 'auto' | 'keep' | 'drop';
  sessions: { max: number; idleMs: number };
  /** Root of the per-session scratch workspaces, when on (`session_workspaces: true`). */
  workspacesDir?: string;
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

/**
 * The generated key: read from `file`, or created there (0600, in a 0700 directory, never through a
 * symlink) when it does not exist yet. A file another user could read or write is refused.
 */
export function readOrCreateKey(file: string): { key: string; created: boolean } {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let created = false;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  }
  try {
    const stat = fstatSync(fd);
    if (process.getuid && (stat.uid !== process.getuid() || (stat.mode & 0o077) !== 0)) {
      throw new GatewayConfigError(`${file} must be yours and not readable by others (chmod 600 ${file}), or set api_key`);
    }
    if (created) {
      const key = `bc-${randomBytes(24).toString('hex')}`;
      writeSync(fd, `${key}\n`);
      return { key, created };
    }
    const key = readFileSync(fd, 'utf8').trim();
    if (key === '') throw new GatewayConfigError(`${file} is empty: delete it to get a new key, or set api_key`);
    return { key, created };
  } finally {
    closeSync(fd);
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
    config = resolveGatewayConfig(raw ?? {}, env, path.dirname(target));
    config.source = path.resolve(target);
  }
  return withKey(config, env);
}

/**
 * The `gateway:` section of the one config file (src/config/file.ts) as a config: the same schema
 * and the same key rule as a file of its own.
 */
export function gatewayConfigFromSection(section: unknown, file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const config = resolveGatewayConfig(section, env, path.dirname(file));
  config.source = `${file} (gateway section)`;
  return withKey(config, env);
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

/**
 * Validates a config object in the file's shape (snake_case keys) and fills in defaults.
 * Relative paths (workspace, model cwd, command) are resolved against `baseDir`.
 */
export function resolveGatewayConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, baseDir = process.cwd()): GatewayConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new GatewayConfigError('the config must be a mapping (key: value lines)');
  const o = raw as Record<string, unknown>;
  const known = [
    'port',
    'api_key',
    'default_model',
    'request_timeout_ms',
    'max_concurrent',
    'cursor_cli_path',
    'workspace',
    'models',
    'list_cli_models',
    'cli_models_timeout_ms',
    'auth',
    'max_queued',
    'max_connections',
    'body_timeout_ms',
    'env_allow',
    'side_requests',
    'client_system_prompt',
    'sessions',
    'session_workspaces',
    'workspaces_dir',
  ];
  const unknown = Object.keys(o).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new GatewayConfigError(`unknown config key(s): ${unknown.join(', ')} (known: ${known.join(', ')})`);

  const port = integer(o.port, 'port', DEFAULT_PORT, 0, 65535);
  const apiKey = optionalString(o.api_key, 'api_key');
  const workspace = expandPath(optionalString(o.workspace, 'workspace') ?? process.cwd(), baseDir);
  const config: GatewayConfig = {
    port,
    defaultModel: optionalString(o.default_model, 'default_model') ?? DEFAULT_MODEL,
    requestTimeoutMs: integer(o.request_timeout_ms, 'request_timeout_ms', DEFAULT_REQUEST_TIMEOUT_MS, 1),
    maxConcurrent: integer(o.max_concurrent, 'max_concurrent', DEFAULT_MAX_CONCURRENT, 1),
    cursorCliPath: optionalString(o.cursor_cli_path, 'cursor_cli_path') ?? nonEmpty(env.CURSOR_AGENT_BIN) ?? 'agent',
    workspace,
    models: resolveModels(o.models, baseDir),
    listCliModels: boolean(o.list_cli_models, 'list_cli_models', true),
    cliModelsTimeoutMs: integer(o.cli_models_timeout_ms, 'cli_models_timeout_ms', DEFAULT_CLI_MODELS_TIMEOUT_MS, 1),
    auth: oneOf(o.auth, 'auth', ['key', 'none'] as const, 'key'),
    maxQueued: integer(o.max_queued, 'max_queued', DEFAULT_MAX_QUEUED, 0),
    maxConnections: integer(o.max_connections, 'max_connections', DEFAULT_MAX_CONNECTIONS, 1),
    bodyTimeoutMs: integer(o.body_timeout_ms, 'body_timeout_ms', BODY_TIMEOUT_MS, 1),
    envAllow: [...DEFAULT_ENV_ALLOW, ...stringList(o.env_allow, 'env_allow')],
    sideRequests: sideRequests(o.side_requests),
    clientSystemPrompt: oneOf(o.client_system_prompt, 'client_system_prompt', ['auto', 'keep', 'drop'] as const, 'auto'),
    sessions: sessionsOf(o.sessions),
  };
  if (apiKey !== undefined) config.apiKey = apiKey;
  if (boolean(o.session_workspaces, 'session_workspaces', false)) {
    const dir = optionalString(o.workspaces_dir, 'workspaces_dir');
    config.workspacesDir = dir === undefined ? path.join(defaultDataDir(env), 'gateway-workspaces') : expandPath(dir, baseDir);
  }
  for (const [name, route] of Object.entries(config.models)) if (route.worktree) checkWorktree(name, route, workspace);
  if (config.cursorCliPath.includes('/')) config.cursorCliPath = expandPath(config.cursorCliPath, baseDir);
  if (Object.keys(config.models).length === 0) config.models[DEFAULT_MODEL] = { kind: 'cursor-cli', allowWrites: false, env: {} };
  return config;
}

function resolveModels(value: unknown, baseDir: string): Record<string, ModelRoute> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new GatewayConfigError('`models` must be a mapping of model name → settings');
  const models: Record<string, ModelRoute> = {};
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    const where = `models.${name}`;
    const o = entry ?? {};
    if (typeof o !== 'object' || Array.isArray(o)) throw new GatewayConfigError(`\`${where}\` must be a mapping (or {} for the defaults)`);
    const e = o as Record<string, unknown>;
    const known = ['template', 'cli_model', 'allow_writes', 'command', 'args', 'env', 'cwd', 'description', 'worktree', 'base'];
    const unknown = Object.keys(e).filter((key) => !known.includes(key));
    if (unknown.length > 0)
      throw new GatewayConfigError(`unknown key(s) in \`${where}\`: ${unknown.join(', ')} (known: ${known.join(', ')})`);
    const envMap = stringMap(e.env, `${where}.env`);
    const cwdValue = optionalString(e.cwd, `${where}.cwd`);
    const cwd = cwdValue === undefined ? undefined : expandPath(cwdValue, baseDir);
    const description = optionalString(e.description, `${where}.description`);
    const command = optionalString(e.command, `${where}.command`);
    const template = optionalString(e.template, `${where}.template`);
    const worktreeOf = worktreeSetting(e, where);
    if (command !== undefined && template !== undefined)
      throw new GatewayConfigError(`\`${where}\`: give either \`command\` or \`template\`, not both`);
    if (command !== undefined) {
      const args = e.args ?? [];
      if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
        throw new GatewayConfigError(`\`${where}.args\` must be a list of strings`);
      const resolved = command.includes('/') ? expandPath(command, baseDir) : command;
      const agentModel = optionalString(e.cli_model, `${where}.cli_model`);
      models[name] = {
        kind: 'command',
        command: resolved,
        args,
        allowWrites: boolean(e.allow_writes, `${where}.allow_writes`, false),
        ...(agentModel ? { cliModel: agentModel } : {}),
        env: envMap,
        ...(cwd ? { cwd } : {}),
        ...(description ? { description } : {}),
        ...worktreeOf,
      };
      continue;
    }
    if (template !== undefined && template !== 'cursor-cli' && template !== 'claude-code')
      throw new GatewayConfigError(`\`${where}.template\`: "cursor-cli" and "claude-code" are built in; use \`command\` for other agents`);
    const cliModel = optionalString(e.cli_model, `${where}.cli_model`);
    models[name] = {
      kind: template ?? 'cursor-cli',
      allowWrites: boolean(e.allow_writes, `${where}.allow_writes`, false),
      env: envMap,
      ...(cliModel ? { cliModel } : {}),
      ...(cwd ? { cwd } : {}),
      ...(description ? { description } : {}),
      ...worktreeOf,
    };
  }
  return models;
}

/** `worktree: true` and its `base` (the repository is found by `checkWorktree` once the workspace is known). */
function worktreeSetting(e: Record<string, unknown>, where: string): { worktree?: GatewayWorktree } {
  const on = boolean(e.worktree, `${where}.worktree`, false);
  const base = optionalString(e.base, `${where}.base`);
  if (!on) {
    if (base !== undefined)
      throw new GatewayConfigError(`\`${where}.base\` is the base of a worktree: add \`worktree: true\`, or remove it`);
    return {};
  }
  return { worktree: { repo: '', ...(base !== undefined ? { base } : {}) } };
}

/**
 * A `worktree: true` model's repository, checked now as the broker checks a coding task (a git
 * repository around the model's `cwd`, else the `workspace`; an existing base), so that a bad config
 * stops the gateway with one line instead of failing every request.
 */
function checkWorktree(name: string, route: ModelRoute, workspace: string): void {
  const cwd = route.cwd ?? workspace;
  const where = route.cwd === undefined ? `its workspace ${cwd}` : `its cwd ${cwd}`;
  try {
    const plan = planNewWorktree(cwd, route.worktree!.base === undefined ? {} : { base: route.worktree!.base });
    route.worktree!.repo = plan.repo;
  } catch (error) {
    throw new GatewayConfigError(
      `\`models.${name}\` has \`worktree: true\`, but ${where} cannot have one: ${(error as Error).message}. Point \`cwd\` (or \`workspace\`) at a git repository.`,
    );
  }
}

function sideRequests(value: unknown): GatewayConfig['sideRequests'] {
  const text = optionalString(value, 'side_requests') ?? 'local';
  return text === 'local' || text === 'run' ? text : { model: text };
}

function sessionsOf(value: unknown): GatewayConfig['sessions'] {
  if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value)))
    throw new GatewayConfigError('`sessions` must be a mapping: { max: 32, idle_ms: 900000 }');
  const o = (value ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(o).filter((key) => key !== 'max' && key !== 'idle_ms');
  if (unknown.length > 0) throw new GatewayConfigError(`unknown key(s) in \`sessions\`: ${unknown.join(', ')} (known: max, idle_ms)`);
  return {
    max: integer(o.max, 'sessions.max', DEFAULT_MAX_SESSIONS, 0),
    idleMs: integer(o.idle_ms, 'sessions.idle_ms', DEFAULT_SESSION_IDLE_MS, 1),
  };
}

function oneOf<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !choices.includes(value as T))
    throw new GatewayConfigError(`Expected \`${name}\` to be one of ${choices.join(', ')}, got ${describe(value)}`);
  return value as T;
}

function stringList(value: unknown, name: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== ''))
    throw new GatewayConfigError(`Expected \`${name}\` to be a list of names (\`*\` is a wildcard)`);
  return value as string[];
}

function describe(value: unknown): string {
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\` (${Array.isArray(value) ? 'list' : typeof value})`;
}

function integer(value: unknown, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new GatewayConfigError(
      `Expected \`${name}\` to be an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}, got ${describe(value)}`,
    );
  }
  return value;
}

function boolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw new GatewayConfigError(`Expected \`${name}\` to be true or false, got ${describe(value)}`);
  return value;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.trim() === '')
    throw new GatewayConfigError(`Expected \`${name}\` to be a non-empty string, got ${describe(value)}`);
  return value;
}

function stringMap(value: unknown, name: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new GatewayConfigError(`Expected \`${name}\` to be a mapping of names to strings`);
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      throw new GatewayConfigError(`Expected \`${name}.${key}\` to be a string, got ${describe(v)}`);
    out[key] = String(v);
  }
  return out;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value : undefined;
}

function expandPath(value: string, baseDir: string): string {
  const home = value === '~' || value.startsWith('~/') ? path.join(homedir(), value.slice(1)) : value;
  return path.resolve(baseDir, home);
}
