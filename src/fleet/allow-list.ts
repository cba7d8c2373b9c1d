/**
 * The commands a worker runs: never arbitrary shell from the queue (anyone who can push a job into
 * Redis writes the job). Two kinds of entry, judged with the core's run-policy rules
 * (src/broker/run-policy.ts), so what is compared is the effective command line:
 * - `--allow "node /opt/agents/review.mjs"`: a command line prefix; a job whose own command line
 *   starts with it runs, in the worker's working directory;
 * - each preset of `--presets <dir>` (the templates and demo agents that directory holds): a job
 *   that names it (`AttemptJob.preset`) runs the worker's own copy — its command line, in its
 *   directory — and nothing else; the job's command line must be that preset's too.
 * The one argument exempt from matching is the `--task-id=<id>` the broker appends last.
 */
import path from 'node:path';
import { ARG_TASK_ID } from '../protocol/index.js';
import { effectiveArgv, RunPolicy, type RunRule } from '../broker/run-policy.js';

export interface AllowedCommand {
  argv: string[];
  /** Where it runs. @default the worker's working directory */
  cwd?: string;
  /** The template or preset it is: a job naming it runs exactly this. */
  preset?: string;
}

/** What a job runs once allowed: the worker's command line and directory. */
export interface Admitted {
  command: string;
  args: string[];
  cwd: string | undefined;
}

/** The parts of a job the allow-list judges. */
export interface JobCommand {
  taskId: string;
  command: string;
  args: readonly string[];
  preset?: string;
}

export class AllowList {
  constructor(readonly entries: readonly AllowedCommand[]) {}

  /** `"node /x/agent.mjs"` → `["node", "/x/agent.mjs"]` (split on spaces; no quoting). */
  static parse(lines: readonly string[], cwd?: string): AllowedCommand[] {
    return lines.map((line) => ({ argv: line.trim().split(/\s+/).filter(Boolean), ...(cwd ? { cwd } : {}) }));
  }

  /** The job as this worker runs it, or why it refuses it (a sentence after the worker's name). */
  admit(job: JobCommand): Admitted | string {
    const own = `${ARG_TASK_ID}${job.taskId}`;
    const args = job.args.at(-1) === own ? job.args.slice(0, -1) : [...job.args];
    const taskIdArg = args.length < job.args.length ? [own] : [];
    const preset = job.preset === undefined ? undefined : this.entries.find((e) => e.preset === job.preset);
    if (preset) return admitPreset(preset, job.command, args, taskIdArg);
    const prefixes = this.entries.filter((entry) => entry.preset === undefined && entry.argv.length > 0);
    const here = process.cwd();
    const policy = new RunPolicy(prefixes.map((entry, i) => prefixRule(entry, i, here)));
    const found = policy.match(job.command, args, here);
    if (found) return { command: job.command, args: [...args, ...taskIdArg], cwd: prefixes[Number(found.name)]!.cwd };
    const named = job.preset === undefined ? '' : ` (nor does this worker hold preset "${job.preset}")`;
    return `refuses \`${shown([job.command, ...args])}\`: not an allowed command${named} (start the worker with --allow "<command line prefix>", or --presets <dir> holding that preset)`;
  }
}

/**
 * A job naming a preset this worker holds runs the worker's own copy — its command line, in its
 * directory — when the job's command line is that preset's too (the same program and script,
 * wherever the broker's copy lies; the same arguments).
 */
function admitPreset(entry: AllowedCommand, command: string, args: string[], taskIdArg: string[]): Admitted | string {
  const [program, ...own] = entry.argv as [string, ...string[]];
  const asQueued = effectiveArgv(command, args, '/');
  const asHeld = effectiveArgv(program, own, entry.cwd ?? process.cwd());
  if (!sameCommandLine(asQueued, asHeld)) {
    return `refuses \`${shown([command, ...args])}\`: not the command line of preset "${entry.preset}" (\`${shown(entry.argv)}\`)`;
  }
  return { command: program, args: [...own, ...taskIdArg], cwd: entry.cwd };
}

/** Entry `i` as a core rule named by its index; its relative paths resolve in its own directory. */
function prefixRule(entry: AllowedCommand, i: number, here: string): RunRule {
  const [command, ...args] = entry.argv as [string, ...string[]];
  return { name: String(i), command, args, moreArgs: true, base: entry.cwd ?? here };
}

/** Equal, but a script path (Node's first argument) counts by its file name: the broker's copy lies elsewhere. */
function sameCommandLine(queued: readonly string[], held: readonly string[]): boolean {
  if (queued.length !== held.length) return false;
  return queued.every((part, i) => (i === 1 && queued[0] === 'node' ? path.basename(part) === path.basename(held[i]!) : part === held[i]));
}

function shown(argv: readonly string[]): string {
  const line = argv.join(' ').replace(/[\u0000-\u001f\u007f]/g, ' ');
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
