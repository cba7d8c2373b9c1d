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
 *   budget:   { default: { max_tokens, max_cost_usd, max_turns }, mcp: { … }, … }   (src/broker/guards/budget.ts)
 *   notify:   { webhooks: [{ url, events, secret }] }   (src/notify/channels.ts: one entry per channel)
 *   acp:      { agents: {claude: {command, args, env}}, approvals: {default: {edit: ask}}, on_budget: pause }
 *             (src/broker/acp/settings.ts)
 *
 * Only the file's shape is checked here (a mapping of mappings); each command checks its section
 * (`run:` and `serve:` through their shapes, ./sections.ts).
 */
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import { parseDuration } from '../model/duration.js';
import { firstProblem, must } from '../model/shapes.js';

export const CONFIG_ENV = 'BACKCHANNEL_CONFIG';
export const SECTIONS = ['run', 'serve', 'gateway', 'run_policy', 'budget', 'notify', 'acp'] as const;
export type SectionName = (typeof SECTIONS)[number];

/** Where the file's name goes in a message about its shape. */
const FILE = '{file}';

/** A section: a mapping (key: value lines), or empty. */
const SECTION = (name: string) =>
  z.nullish(z.record(z.string(), z.unknown(), { error: () => `${FILE}: the "${name}" section must be a mapping (key: value lines)` }));

/**
 * The file's shape: a mapping of the known sections, each a mapping. Only the shape is checked here;
 * each command checks its own section (messages start after the file's name).
 */
const CONFIG_FILE = z.strictObject(
  Object.fromEntries(SECTIONS.map((name) => [name, SECTION(name)])) as Record<SectionName, ReturnType<typeof SECTION>>,
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `${FILE}: unknown section "${String(issue.keys[0])}" (expected ${SECTIONS.join(', ')})`
        : `${FILE} must be a mapping of sections (${SECTIONS.join(', ')})`,
  },
);

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
    raw = parseYaml(readTrustedFile(file)) ?? {};
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = z.safeParse(CONFIG_FILE, raw);
  if (!parsed.success) throw new ConfigError(firstProblem(parsed.error).replace(FILE, file));
  const sections: LoadedConfig['sections'] = {};
  for (const [name, value] of Object.entries(parsed.data)) if (value) sections[name as SectionName] = value;
  return { path: file, exists: true, sections };
}

/** Symlink hops followed before a chain is refused (the kernel's own limit is 40). */
const MAX_LINK_HOPS = 40;

/**
 * The text of a config file, read only when no other user could have written it: the file, every
 * symlink on the way to it and the directory holding it belong to us (or root), and neither the file
 * nor that directory is writable by others (a sticky directory such as /tmp may be). A config names
 * the commands the gateway runs and whether it asks for a key: another user's would run theirs as us.
 * Throws a one-line `ConfigError` saying why and what to do.
 */
export function readTrustedFile(file: string): string {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return readFileSync(file, 'utf8');
  const me = process.getuid();
  const ours = (uid: number) => uid === me || uid === 0;
  const refuse = (why: string): never => {
    throw new ConfigError(`refusing ${file}: ${why}; a config file must be yours and writable only by you`);
  };
  // Resolve the path one component at a time, judging every symlink on the way (not only the last).
  const pending = path.resolve(file).split(path.sep).filter(Boolean);
  let at = path.parse(path.resolve(file)).root;
  for (let hops = 0; pending.length > 0;) {
    const next = path.join(at, pending.shift()!);
    const link = lstatSync(next);
    if (!link.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (!ours(link.uid)) refuse(`it is reached through ${next}, a symlink of uid ${link.uid}`);
    if (++hops > MAX_LINK_HOPS) refuse('too many symlinks');
    const target = readlinkSync(next);
    pending.unshift(...target.split(path.sep).filter(Boolean));
    if (path.isAbsolute(target)) at = path.parse(target).root;
  }
  const dir = statSync(path.dirname(at));
  if (!ours(dir.uid)) refuse(`its directory ${path.dirname(at)} belongs to uid ${dir.uid}`);
  if ((dir.mode & 0o022) !== 0 && (dir.mode & 0o1000) === 0)
    refuse(`its directory ${path.dirname(at)} is writable by others (mode ${(dir.mode & 0o777).toString(8)})`);
  const fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) refuse('it is not a regular file');
    if (!ours(stat.uid)) refuse(`it belongs to uid ${stat.uid} (chown it to yourself)`);
    if ((stat.mode & 0o022) !== 0) refuse(`it is writable by ${stat.mode & 0o002 ? 'everyone' : 'its group'} (chmod go-w ${at})`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The types a section's key may be (./sections.ts), each with its message. */
export const SETTING = {
  number: z.number({ error: must('must be a non-negative number') }).check(z.minimum(0, { error: must('must be a non-negative number') })),
  integer: z
    .number({ error: must('must be a non-negative integer') })
    .check(z.int({ error: must('must be a non-negative integer') }), z.minimum(0, { error: must('must be a non-negative integer') })),
  boolean: z.boolean({ error: must('must be a boolean') }),
  string: z.string({ error: must('must be a string') }),
  /** Milliseconds, or a duration as people write it (`90s`, `10m`, `2h`). */
  duration: z.pipe(
    z.union([z.number(), z.string()], { error: must('must be a duration such as 90s, 10m, 2h (or milliseconds)') }),
    z.transform((value: number | string, ctx) => {
      const ms = typeof value === 'number' ? value : parseDuration(value);
      if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
        ctx.issues.push({
          code: 'custom',
          input: value,
          message: must('must be a duration such as 90s, 10m, 2h (or milliseconds)')({ input: value }),
        });
        return 0;
      }
      return ms;
    }),
  ),
};
