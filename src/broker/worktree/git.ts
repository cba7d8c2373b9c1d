/**
 * Runs git for the worktree code: argv only (never a shell), in a given directory, with an
 * environment that cannot send it elsewhere (the caller's GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE …
 * are dropped), messages in English (they are parsed: conflict file names), no pager, no prompts.
 *
 * A repository is input: an MCP client picks the directory, an agent writes the files of its
 * worktree. So no git run here starts a program the repository names. Every call is given, as
 * command-line-scope config (GIT_CONFIG_COUNT/KEY/VALUE, which outranks the repository's own):
 *   - hooks off (`core.hooksPath=/dev/null`), fsmonitor off, no pager, editor, askpass or ssh command,
 *     no credential helper, no signing (`commit.gpgSign`, `log.showSignature`, `gpg.*program`);
 *   - no transport at all (`protocol.allow=never`: a partial clone's lazy fetch cannot run
 *     `remote.*.uploadpack` or an `ext::` command), no submodule recursion, no automatic gc/maintenance;
 *   - `diff.external` empty, and every filter (`filter.<name>.clean/smudge/process`, `required`),
 *     diff driver (`diff.<name>.textconv/command`) and merge driver (`merge.<name>.driver`) named in
 *     any config git reads for that directory emptied: git runs a driver only when its command is
 *     non-empty. The names come from `git config --get-regexp` run the same way just before.
 * Trade-off: a repository that needs a filter (Git LFS) has its worktree checked out without it (the
 * pointer files), and its diff shows them as they are stored.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';

/** git's failure: its own last line of stderr, and the whole of it for parsing. */
export class GitError extends Error {
  override readonly name = 'GitError';
  constructor(
    readonly args: readonly string[],
    readonly stderr: string,
    readonly exitCode: number | null,
    /** What git printed on stdout before failing (`rev-parse --verify --quiet` prints what it found first). */
    readonly stdout = '',
  ) {
    super(lastLine(stderr) || `git ${args[0] ?? ''} failed (exit ${String(exitCode)})`);
  }
}

export interface GitOptions {
  cwd: string;
  /** GIT_INDEX_FILE, GIT_DIR, GIT_WORK_TREE and the like, on top of the clean environment. */
  env?: Record<string, string>;
  /** Given to git's stdin. */
  input?: string | Buffer;
  /**
   * The driver overrides `driverConfig` found for this cwd and env, when a caller runs several
   * commands on one repository (one listing instead of one per command). @default listed now
   */
  drivers?: DriverConfig;
}

/** Config pairs that empty every driver command of one repository (from `driverConfig`). */
export type DriverConfig = readonly (readonly [string, string])[];

/**
 * What a git call's stdout may hold in memory: lists and figures (numstat of a vendored directory),
 * never a diff (a diff goes to a file: `gitToFile`). Above it the call fails with a clear message.
 */
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/** Config every call gets, whatever the repository says (see the header). */
export const FIXED_CONFIG: readonly (readonly [string, string])[] = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['core.askPass', ''],
  ['core.sshCommand', ''],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['credential.helper', ''],
  ['diff.external', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['gpg.program', ''],
  ['gpg.openpgp.program', ''],
  ['gpg.ssh.program', ''],
  ['gpg.x509.program', ''],
  ['gpg.ssh.defaultKeyCommand', ''],
  ['protocol.allow', 'never'],
  ...['ext', 'file', 'git', 'ssh', 'http', 'https'].map((name) => [`protocol.${name}.allow`, 'never'] as const),
  ['submodule.recurse', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
];

/** Config keys naming a program a driver runs: emptied for every driver git would read. */
const DRIVER_KEY = /^(filter\..*\.(clean|smudge|process)|diff\..*\.(textconv|command)|merge\..*\.driver)$/s;
const DRIVER_NAMES = String.raw`^(filter|diff|merge)\.`;

function baseEnv(extra: Record<string, string> | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith('GIT_')) env[name] = value;
  return { ...env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_PAGER: 'cat', GIT_EDITOR: ':', ...extra };
}

/** `pairs` as command-scope config in the environment (keys with any characters, unlike `-c`). */
function withConfig(env: Record<string, string>, pairs: readonly (readonly [string, string])[]): Record<string, string> {
  const out: Record<string, string> = { ...env, GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${i}`] = key;
    out[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return out;
}

/** The overrides for every driver named in `listing` (`git config --null --get-regexp` output). */
function driverOverrides(listing: string): [string, string][] {
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  for (const entry of listing.split('\0')) {
    const key = entry.split('\n', 1)[0]!;
    if (!DRIVER_KEY.test(key) || seen.has(key)) continue;
    seen.add(key);
    pairs.push([key, '']);
    if (key.startsWith('filter.')) pairs.push([`${key.slice(0, key.lastIndexOf('.'))}.required`, 'false']);
  }
  return pairs;
}

const LIST_DRIVERS = ['config', '--null', '--get-regexp', DRIVER_NAMES];

/** `git config` exits 1 when nothing matches: no drivers. */
function listingOf(error: unknown, stdout: string): string | undefined {
  if (!error) return stdout;
  const status = (error as { status?: number; code?: unknown }).status ?? (error as { code?: unknown }).code;
  return status === 1 ? '' : undefined;
}

/** The overrides for every driver git would read in `cwd` with `env` (GIT_DIR …). */
export async function driverConfig(cwd: string, env?: Record<string, string>): Promise<DriverConfig> {
  return driverOverrides(await run(LIST_DRIVERS, cwd, withConfig(baseEnv(env), FIXED_CONFIG), undefined, true));
}

/** Runs `git <args>` and resolves with its stdout; rejects with a GitError. */
export async function git(args: readonly string[], options: GitOptions): Promise<string> {
  const drivers = options.drivers ?? (await driverConfig(options.cwd, options.env));
  return run(args, options.cwd, withConfig(baseEnv(options.env), [...FIXED_CONFIG, ...drivers]), options.input, false);
}

/** stderr kept from a git whose stdout goes to a file: its end (the error lines), bounded. */
const MAX_STDERR_CHARS = 64 * 1024;

/**
 * Runs `git <args>` with its stdout written straight to the open file `fd` (a diff of any size never
 * passes through this process's memory); resolves when git has exited 0, rejects with a GitError.
 */
export async function gitToFile(args: readonly string[], options: Omit<GitOptions, 'input'>, fd: number): Promise<void> {
  const drivers = options.drivers ?? (await driverConfig(options.cwd, options.env));
  const env = withConfig(baseEnv(options.env), [...FIXED_CONFIG, ...drivers]);
  await new Promise<void>((resolve, reject) => {
    const child = spawn('git', args, { cwd: options.cwd, env, stdio: ['ignore', fd, 'pipe'] });
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-MAX_STDERR_CHARS);
    });
    child.on('error', (error: NodeJS.ErrnoException) => reject(failure(args, { code: error.code }, stderr)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(failure(args, { code: code ?? undefined, status: signal ?? undefined }, stderr));
    });
  });
}

function run(args: readonly string[], cwd: string, env: Record<string, string>, input: string | Buffer | undefined, listing: boolean) {
  return new Promise<string>((resolve, reject) => {
    const child = execFile('git', args, { cwd, env, maxBuffer: MAX_OUTPUT_BYTES, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (listing) {
        const text = listingOf(error, stdout);
        if (text !== undefined) return resolve(text);
      } else if (!error) return resolve(stdout);
      reject(failure(args, error!, stderr, stdout));
    });
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  });
}

function failure(args: readonly string[], error: { code?: unknown; status?: unknown }, stderr: string, stdout = ''): GitError {
  const code = error.code;
  if (code === 'ENOENT' && !stderr) return new GitError(args, 'git is not installed (not found on PATH)', null);
  if (code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER' || code === 'ENOBUFS')
    return new GitError(args, `git ${args[0] ?? ''} printed more than ${MAX_OUTPUT_BYTES / 1024 / 1024} MB; too much to read`, null);
  const exit = typeof code === 'number' ? code : typeof error.status === 'number' ? error.status : null;
  return new GitError(args, stderr, exit, stdout);
}

/** The synchronous form, for the checks a submit makes before it returns (a few milliseconds each). */
export function gitSync(args: readonly string[], options: GitOptions): string {
  const drivers = options.drivers ?? driverConfigSync(options.cwd, options.env);
  return runSync(args, options.cwd, withConfig(baseEnv(options.env), [...FIXED_CONFIG, ...drivers]), options.input, false);
}

export function driverConfigSync(cwd: string, env?: Record<string, string>): DriverConfig {
  return driverOverrides(runSync(LIST_DRIVERS, cwd, withConfig(baseEnv(env), FIXED_CONFIG), undefined, true));
}

function runSync(args: readonly string[], cwd: string, env: Record<string, string>, input: string | Buffer | undefined, listing: boolean) {
  try {
    return execFileSync('git', args, {
      cwd,
      env,
      maxBuffer: MAX_OUTPUT_BYTES,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(input !== undefined ? { input } : {}),
    });
  } catch (error) {
    const text = listing ? listingOf(error, String((error as { stdout?: string }).stdout ?? '')) : undefined;
    if (text !== undefined) return text;
    const { stderr, stdout } = error as { stderr?: string | Buffer; stdout?: string | Buffer };
    throw failure(args, error as { code?: unknown }, String(stderr ?? ''), String(stdout ?? ''));
  }
}

function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return (lines.find((line) => line.startsWith('fatal:') || line.startsWith('error:')) ?? lines.at(-1) ?? '').replace(
    /^(fatal|error): /,
    '',
  );
}
