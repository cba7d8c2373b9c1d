/**
 * Runs git for the worktree code: argv only (never a shell), in a given directory, with an
 * environment that cannot send it elsewhere (the caller's GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE …
 * are dropped), messages in English (they are parsed: conflict file names), no pager, no prompts,
 * and no hooks (a repository's post-checkout hook would run in our worktree, as us).
 */
import { execFile, execFileSync } from 'node:child_process';

/** git's failure: its own last line of stderr, and the whole of it for parsing. */
export class GitError extends Error {
  override readonly name = 'GitError';
  constructor(
    readonly args: readonly string[],
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(lastLine(stderr) || `git ${args[0] ?? ''} failed (exit ${String(exitCode)})`);
  }
}

export interface GitOptions {
  cwd: string;
  /** GIT_INDEX_FILE and the like, on top of the clean environment. */
  env?: Record<string, string>;
  /** Given to git's stdin. */
  input?: string | Buffer;
}

/** Diffs and patches can be big (a vendored directory): well above what a reviewable change is. */
const MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
/** Options every call gets: no hooks, no pager, no fsmonitor daemon started in the user's repository. */
const FIXED = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'core.pager=cat'];

function gitEnv(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('GIT_')) env[name] = value;
  return { ...env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', ...extra };
}

/** Runs `git <args>` and resolves with its stdout; rejects with a GitError. */
export function git(args: readonly string[], options: GitOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...FIXED, ...args],
      { cwd: options.cwd, env: gitEnv(options.env), maxBuffer: MAX_OUTPUT_BYTES, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT' && !stderr) return reject(new GitError(args, 'git is not installed (not found on PATH)', null));
          return reject(new GitError(args, stderr, typeof code === 'number' ? code : ((error as { code?: number }).code ?? null)));
        }
        resolve(stdout);
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** The synchronous form, for the checks a submit makes before it returns (a few milliseconds each). */
export function gitSync(args: readonly string[], options: GitOptions): string {
  try {
    return execFileSync('git', [...FIXED, ...args], {
      cwd: options.cwd,
      env: gitEnv(options.env),
      maxBuffer: MAX_OUTPUT_BYTES,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.input !== undefined ? { input: options.input } : {}),
    });
  } catch (error) {
    const failure = error as { stderr?: string | Buffer; status?: number | null; code?: string };
    if (failure.code === 'ENOENT') throw new GitError(args, 'git is not installed (not found on PATH)', null);
    throw new GitError(args, String(failure.stderr ?? ''), failure.status ?? null);
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
