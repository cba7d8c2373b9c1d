/**
 * The commands a worker runs: never arbitrary shell from the queue. An entry is a command line
 * prefix registered on the worker (`--allow "node /opt/agents/review.mjs"`, or each preset of
 * `--templates <dir>`, which also gives the directory it runs in); a job's command line must start
 * with one, else the worker refuses it and says how to allow it.
 */
import { ARG_TASK_ID } from '../protocol/index.js';

export interface AllowedCommand {
  argv: string[];
  /** Where it runs. @default the worker's working directory */
  cwd?: string;
}

export class AllowList {
  constructor(readonly entries: readonly AllowedCommand[]) {}

  /** `"node /x/agent.mjs"` → `["node", "/x/agent.mjs"]` (split on spaces; no quoting). */
  static parse(lines: readonly string[], cwd?: string): AllowedCommand[] {
    return lines.map((line) => ({ argv: line.trim().split(/\s+/).filter(Boolean), ...(cwd ? { cwd } : {}) }));
  }

  /** The entry that allows this command line (the `--task-id=` argument aside), or why none does. */
  match(command: string, args: readonly string[]): AllowedCommand | string {
    const argv = [command, ...args.filter((arg) => !arg.startsWith(ARG_TASK_ID))];
    const found = this.entries.find((entry) => entry.argv.length > 0 && entry.argv.every((part, i) => argv[i] === part));
    if (found) return found;
    const line = argv.join(' ');
    return `refuses \`${line.length > 200 ? `${line.slice(0, 200)}…` : line}\`: not an allowed command (start the worker with --allow "<command line prefix>" or --templates <dir>)`;
  }
}
