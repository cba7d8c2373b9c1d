/**
 * Gateway configuration: the YAML file (default `~/.backchannel/config.yaml`, optional) turned into a
 * validated `GatewayConfig`. Every field has a default, so the gateway starts with no file at all.
 *
 * ```yaml
 * port: 8976
 * api_key: change-me            # optional: clients must send `Authorization: Bearer change-me`
 * default_model: cursor-cli     # used when a request names no model
 * request_timeout_ms: 300000    # whole request, queue wait included → 504
 * max_concurrent: 5             # more requests wait in the queue, none is dropped
 * cursor_cli_path: agent        # else $CURSOR_AGENT_BIN, else `agent` on PATH
 * workspace: ~/project          # working directory of the agents (default: where the gateway started)
 * models:
 *   cursor-cli: {}              # the cursor-cli template with the CLI's own default model
 *   sonnet: { cli_model: sonnet-4.5 }
 *   my-agent: { command: node, args: [./my-agent.mjs], env: { FOO: bar } }
 * ```
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

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

/** How one model name is served. */
export type ModelRoute =
  | {
      kind: 'cursor-cli';
      /** `--model` for the Cursor CLI; absent = the CLI's own default. */
      cliModel?: string;
      /** Passes `--force` (commands and writes without approval). @default false */
      allowWrites: boolean;
      env: Record<string, string>;
      cwd?: string;
      description?: string;
    }
  | {
      kind: 'command';
      command: string;
      args: string[];
      env: Record<string, string>;
      cwd?: string;
      description?: string;
    };

export interface GatewayConfig {
  /** 0 picks a free port. @default 8976 */
  port: number;
  /** Bearer key clients must send; absent = no key needed (the gateway only listens on 127.0.0.1). */
  apiKey?: string;
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

/** The cursor-cli template's entry point (src|dist/gateway → ../../templates). */
export function cursorTemplatePath(): string {
  return fileURLToPath(new URL('../../templates/cursor-cli/agent.mjs', import.meta.url));
}

/**
 * Reads and validates a config file. A missing file at the default path means "all defaults"; a
 * missing file the caller named explicitly is an error (a typo should not silently run defaults).
 */
export function loadGatewayConfig(file?: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const target = file ?? defaultConfigPath();
  if (!existsSync(target)) {
    if (file !== undefined) throw new GatewayConfigError(`config file not found: ${file}`);
    return resolveGatewayConfig({}, env);
  }
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(target, 'utf8'));
  } catch (error) {
    throw new GatewayConfigError(`cannot read ${target}: ${(error as Error).message}`);
  }
  const config = resolveGatewayConfig(raw ?? {}, env, path.dirname(target));
  config.source = path.resolve(target);
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
  };
  if (apiKey !== undefined) config.apiKey = apiKey;
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
    const known = ['template', 'cli_model', 'allow_writes', 'command', 'args', 'env', 'cwd', 'description'];
    const unknown = Object.keys(e).filter((key) => !known.includes(key));
    if (unknown.length > 0)
      throw new GatewayConfigError(`unknown key(s) in \`${where}\`: ${unknown.join(', ')} (known: ${known.join(', ')})`);
    const envMap = stringMap(e.env, `${where}.env`);
    const cwdValue = optionalString(e.cwd, `${where}.cwd`);
    const cwd = cwdValue === undefined ? undefined : expandPath(cwdValue, baseDir);
    const description = optionalString(e.description, `${where}.description`);
    const command = optionalString(e.command, `${where}.command`);
    const template = optionalString(e.template, `${where}.template`);
    if (command !== undefined && template !== undefined)
      throw new GatewayConfigError(`\`${where}\`: give either \`command\` or \`template\`, not both`);
    if (command !== undefined) {
      const args = e.args ?? [];
      if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
        throw new GatewayConfigError(`\`${where}.args\` must be a list of strings`);
      const resolved = command.includes('/') ? expandPath(command, baseDir) : command;
      models[name] = {
        kind: 'command',
        command: resolved,
        args,
        env: envMap,
        ...(cwd ? { cwd } : {}),
        ...(description ? { description } : {}),
      };
      continue;
    }
    if (template !== undefined && template !== 'cursor-cli')
      throw new GatewayConfigError(`\`${where}.template\`: only "cursor-cli" is built in; use \`command\` for other agents`);
    const cliModel = optionalString(e.cli_model, `${where}.cli_model`);
    models[name] = {
      kind: 'cursor-cli',
      allowWrites: boolean(e.allow_writes, `${where}.allow_writes`, false),
      env: envMap,
      ...(cliModel ? { cliModel } : {}),
      ...(cwd ? { cwd } : {}),
      ...(description ? { description } : {}),
    };
  }
  return models;
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
