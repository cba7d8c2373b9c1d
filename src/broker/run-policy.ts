/**
 * The one run policy: which command lines a task may start, with which arguments, in which
 * directories, when it did not come from the owner's own `backchannel run` (docs/run-policy.md).
 * The broker judges every submitted spec by its `origin`; a fleet worker judges every job by the
 * same rules (src/fleet/allow-list.ts). What is judged is the *effective* command line — the
 * program the broker starts and the script it hands to Node, resolved against the working
 * directory — so `node agent.mjs` in another directory is another command.
 *
 * The rules come from the owner (templates, presets, the config file's `run_policy:` section, the
 * gateway's configured models; src/hub/run-policy.ts collects them); this file only decides.
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import * as z from 'zod/mini';
import { firstProblem, must, noKey } from '../model/shapes.js';
import type { TaskOrigin } from '../model/task.js';

/** One allowed command line. */
export interface RunRule {
  /** What allows it, for people: `template cursor-cli`, `preset echo`, `run_policy.allow[0]`. */
  name: string;
  /** A template's or preset's name: the task carries it, and a fleet worker runs its own copy by it. */
  preset?: string;
  /** The program: a name looked up on PATH, a path, or `*` (any program, any arguments). */
  command: string;
  /**
   * A `command` given by name: the absolute path it names on the hub's PATH when the policy was
   * made (absolute PATH entries only). Set by RunPolicy; a name not found there allows nothing.
   */
  resolved?: string;
  /** The first arguments, exactly. @default [] */
  args?: readonly string[];
  /** Further arguments may follow. @default false */
  moreArgs?: boolean;
  /** Relative paths in `command` and in Node's script argument resolve here. @default the task's working directory */
  base?: string;
  /** Working directories it may start in, each with everything below it (not a sandbox: see docs/run-policy.md). @default any */
  dirs?: readonly string[];
  /** Only tasks from these doors (a gateway model: the gateway). @default every door */
  origins?: readonly TaskOrigin[];
}

/** A task as the policy sees it. */
export interface RunRequest {
  command: string;
  args: readonly string[];
  cwd: string;
  origin?: TaskOrigin;
  /** The task sets environment variables (`env`, or a whole caller environment). */
  setsEnv?: boolean;
}

export type Verdict = { allowed: true; rule: RunRule | undefined } | { allowed: false; message: string };

/** Who sent it, in the words of a refusal. */
const DOOR_WORDS: Record<TaskOrigin, string> = {
  cli: '`backchannel run`',
  mcp: 'an MCP client',
  panel: 'the panel',
  gateway: 'the gateway',
  control: 'the control endpoint',
  schedule: 'a schedule',
};

/** The owner's own terminal (and a spec without an origin: the owner's own program) is trusted. */
export function isTrustedOrigin(origin: TaskOrigin | undefined): boolean {
  return origin === undefined || origin === 'cli';
}

const SCRIPT = /\.(mjs|cjs|js|ts|mts|cts)$/i;
const isNode = (command: string) => command === 'node' || command === 'node.exe';
const PYTHON = /^python[0-9.]*(\.exe)?$/;

/**
 * The command line the broker really starts, for comparing: `node` and a script run by Node both
 * become `node <absolute script> …`; a program given as a path becomes absolute, and so does
 * Python's script (`python3 agent.py`); other arguments stay as they are (only those scripts are
 * known to be paths).
 */
export function effectiveArgv(command: string, args: readonly string[], cwd: string): string[] {
  if (isNode(command)) {
    const [first, ...rest] = args;
    return first === undefined || first.startsWith('-') ? ['node', ...args] : ['node', path.resolve(cwd, first), ...rest];
  }
  if (SCRIPT.test(command)) return ['node', path.resolve(cwd, command), ...args];
  const program = command.includes('/') ? path.resolve(cwd, command) : command;
  // Python's script is a path too: `python3 agent.py` in another directory is another program.
  if (PYTHON.test(path.basename(command))) {
    const [first, ...rest] = args;
    if (first !== undefined && !first.startsWith('-')) return [program, path.resolve(cwd, first), ...rest];
  }
  return [program, ...args];
}

export class RunPolicy {
  /** What may run; a program given by name carries the absolute path it was found at (`resolved`). */
  readonly rules: readonly RunRule[];

  /**
   * @param rules what may run
   * @param source where the owner changes it, for refusals (the config file's path)
   * @param searchPath where programs given by name are looked up, once, now @default the hub's PATH
   */
  constructor(
    rules: readonly RunRule[],
    readonly source = 'the config file',
    searchPath = process.env.PATH ?? '',
  ) {
    this.rules = rules.map((rule) => (isBareName(rule.command) ? { ...rule, resolved: findOnPath(rule.command, searchPath) } : rule));
  }

  /** The first rule that allows this command line in this directory (from `origin`, when given). */
  match(command: string, args: readonly string[], cwd: string, origin?: TaskOrigin): RunRule | undefined {
    const argv = effectiveArgv(command, args, cwd);
    return this.rules.find((rule) => (!origin || !rule.origins || rule.origins.includes(origin)) && allows(rule, argv, cwd));
  }

  /** Whether the task may run: always from a trusted origin (`rule` then only names it), else only as a rule allows. */
  judge(request: RunRequest): Verdict {
    if (isTrustedOrigin(request.origin)) return { allowed: true, rule: this.match(request.command, request.args, request.cwd) };
    const rule = this.match(request.command, request.args, request.cwd, request.origin);
    const door = DOOR_WORDS[request.origin!];
    const line = shown([request.command, ...request.args].join(' '));
    // Environment from an untrusted door could turn an allowed command into another (NODE_OPTIONS,
    // CLAUDE_BIN); the gateway's comes from the owner's model config, and `*` allows anything anyway.
    if (request.setsEnv && request.origin !== 'gateway' && rule?.command !== '*') {
      return { allowed: false, message: `refused \`${line}\` from ${door}: only \`backchannel run\` may set environment variables` };
    }
    if (rule) return { allowed: true, rule };
    return {
      allowed: false,
      message:
        `refused \`${line}\` (in ${request.cwd}) from ${door}: not a template, a preset or a command the run policy allows ` +
        `(the owner allows more under \`run_policy: allow:\` in ${this.source}; see docs/run-policy.md)`,
    };
  }
}

function allows(rule: RunRule, argv: readonly string[], cwd: string): boolean {
  if (rule.dirs && !rule.dirs.some((dir) => isWithin(cwd, dir))) return false;
  if (rule.command === '*') return true;
  const wanted = effectiveArgv(rule.command, rule.args ?? [], rule.base ?? cwd);
  if (argv.length < wanted.length || (!rule.moreArgs && argv.length !== wanted.length)) return false;
  if (isBareName(rule.command)) {
    // By name or by the path it was found at; never a name the hub's PATH did not have.
    if (rule.resolved === undefined || (argv[0] !== rule.command && argv[0] !== rule.resolved)) return false;
    return wanted.every((part, i) => i === 0 || argv[i] === part);
  }
  return wanted.every((part, i) => argv[i] === part);
}

/** A program named without a directory (not `*`, not Node: the broker runs its own Node). */
function isBareName(command: string): boolean {
  return command !== '*' && !isNode(command) && !command.includes('/') && !SCRIPT.test(command) && process.platform !== 'win32';
}

/**
 * The first executable file called `name` in the absolute entries of `searchPath`. A relative
 * entry (`.`, `bin`, an empty one) would be looked up in the task's working directory, which the
 * caller chooses, so it is skipped.
 */
export function findOnPath(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) continue;
    const file = path.join(dir, name);
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** `dir` or below it, symlinks resolved (a link inside an allowed directory does not lead out of it). */
function isWithin(cwd: string, dir: string): boolean {
  const relative = path.relative(realOrResolved(dir), realOrResolved(cwd));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realOrResolved(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function shown(line: string): string {
  const flat = line.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** A wrong `run_policy` section: the message names the file and the field. */
export class RunPolicyError extends Error {
  override readonly name = 'RunPolicyError';
}

/**
 * The rules of the config file's `run_policy:` section:
 *
 *   run_policy:
 *     allow:
 *       - { command: node, args: [/opt/agents/review.mjs], more_args: true, dirs: [~/projects] }
 *       - { command: "*", dirs: [~/sandbox] }     # anything, started in ~/sandbox (not confined to it)
 *
 * `~/` is the home directory; other relative paths are relative to the config file's directory.
 */
export function parseRunPolicy(section: Record<string, unknown> | undefined, file: string): RunRule[] {
  if (section === undefined) return [];
  const parsed = z.safeParse(RUN_POLICY_SECTION, section);
  if (!parsed.success) throw new RunPolicyError(`${file}: ${firstProblem(parsed.error, 'run_policy')}`);
  const base = path.dirname(file);
  return (parsed.data.allow ?? []).map((entry, i): RunRule => {
    const { command, args, dirs } = entry;
    const rule: RunRule = { name: `run_policy.allow[${i}]`, command: command.includes('/') ? expandPath(command, base) : command, base };
    if (args) rule.args = args.map((arg, n) => (n === 0 && isNode(command) && !arg.startsWith('-') ? expandPath(arg, base) : arg));
    if (entry.more_args === true || command === '*') rule.moreArgs = true;
    if (dirs) rule.dirs = dirs.map((dir) => expandPath(dir, base));
    return rule;
  });
}

const strings = z.array(z.string({ error: must('must be a string') }), { error: must('must be a list of strings') });

/** The `run_policy:` section's shape (the messages name the field: `run_policy.allow[0].dirs must be …`). */
const RUN_POLICY_SECTION = z.strictObject(
  {
    allow: z.optional(
      z.array(
        z.strictObject(
          {
            command: z
              .string({ error: must('must be a program (a name, a path or "*")') })
              .check(z.refine((command: string) => command.trim() !== '', { error: must('must be a program (a name, a path or "*")') })),
            args: z.optional(strings),
            more_args: z.optional(z.boolean({ error: must('must be true or false') })),
            dirs: z.optional(strings),
          },
          { error: (issue) => noKey('command, args, more_args, dirs')(issue) ?? must('must be a mapping')(issue) },
        ),
        { error: must('must be a list of {command, args, more_args, dirs}') },
      ),
    ),
  },
  { error: noKey('allow') },
);

/** `~/x` → the home directory's x; a relative path → against `base`. */
export function expandPath(value: string, base: string): string {
  if (value === '~' || value.startsWith('~/')) return path.join(homedir(), value.slice(1));
  return path.resolve(base, value);
}
