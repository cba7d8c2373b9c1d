/**
 * The one config file every command reads: YAML at `$XDG_CONFIG_HOME/backchannel/config.yaml`
 * (else `~/.config/backchannel/config.yaml`; `BACKCHANNEL_CONFIG` names another file), one section per
 * command. Options on the command line win over the file; the file wins over built-in defaults.
 *
 *   run:      { timeout: 600000, heartbeat_timeout: 60000, retries: 1, ask_timeout: 300000 }
 *   serve:    { port: 8977, data_dir: ~/work/backchannel, concurrency: 4, keep_token: true,
 *               redis: redis://host:6379, queue: agents }
 *   gateway:  { … the gateway's own schema, src/gateway/config.ts }
 *   run_policy: { allow: [{ command, args, more_args, dirs }] }   (src/broker/run-policy.ts)
 *
 * Only the file's shape is checked here (a mapping of mappings); each command checks its section.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

export const CONFIG_ENV = 'BACKCHANNEL_CONFIG';
export const SECTIONS = ['run', 'serve', 'gateway', 'run_policy'] as const;
export type SectionName = (typeof SECTIONS)[number];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface LoadedConfig {
  /** The file read (or that would be read: it may not exist). */
  path: string;
  exists: boolean;
  sections: Partial<Record<SectionName, Record<string, unknown>>>;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env[CONFIG_ENV]) return path.resolve(env[CONFIG_ENV]);
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(homedir(), '.config');
  return path.join(base, 'backchannel', 'config.yaml');
}

/** Where the gateway read its config before there was one file (still read, with a notice). */
export function legacyGatewayConfigPath(): string {
  return path.join(homedir(), '.backchannel', 'config.yaml');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const file = configPath(env);
  if (!existsSync(file)) return { path: file, exists: false, sections: {} };
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8')) ?? {};
  } catch (error) {
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  if (!isMapping(raw)) throw new ConfigError(`${file} must be a mapping of sections (${SECTIONS.join(', ')})`);
  const sections: LoadedConfig['sections'] = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!(SECTIONS as readonly string[]).includes(name)) {
      throw new ConfigError(`${file}: unknown section "${name}" (expected ${SECTIONS.join(', ')})`);
    }
    if (value === null) continue;
    if (!isMapping(value)) throw new ConfigError(`${file}: the "${name}" section must be a mapping (key: value lines)`);
    sections[name as SectionName] = value;
  }
  return { path: file, exists: true, sections };
}

/** Reads one key of a section, checked: a non-negative number (`integer` for counts), a boolean or a string. */
export function setting(
  config: LoadedConfig,
  section: SectionName,
  key: string,
  type: 'number' | 'integer' | 'boolean' | 'string',
): unknown {
  const value = config.sections[section]?.[key];
  if (value === undefined || value === null) return undefined;
  const ok =
    type === 'boolean'
      ? typeof value === 'boolean'
      : type === 'string'
        ? typeof value === 'string'
        : typeof value === 'number' && value >= 0 && Number.isFinite(value) && (type === 'number' || Number.isInteger(value));
  if (!ok)
    throw new ConfigError(
      `${config.path}: ${section}.${key} must be ${type === 'integer' ? 'a non-negative integer' : type === 'number' ? 'a non-negative number' : `a ${type}`}, got ${JSON.stringify(value)}`,
    );
  return value;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
