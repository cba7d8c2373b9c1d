/** The panel's "recent" list: the most recent distinct command lines, newest first. */
import type { SubmitRequest } from '../bridge/contract.js';
import type { CommandLine } from '../model/task.js';

/** Two command lines are the same one when their command, args and cwd are. */
function sameCommand(a: CommandLine, b: CommandLine): boolean {
  if (a.command !== b.command || a.cwd !== b.cwd || a.args.length !== b.args.length) return false;
  for (let i = 0; i < a.args.length; i++) if (a.args[i] !== b.args[i]) return false;
  return true;
}

/**
 * The first `limit` distinct command lines of `newestFirst` (by command, args and cwd), read only as
 * far as needed. Asked at every `info()`: a line already listed is recognised by comparing it with
 * the (at most `limit`) lines kept, so the tasks read make no garbage (a key string each did).
 */
export function distinctCommands(newestFirst: Iterable<CommandLine>, limit: number): SubmitRequest[] {
  const kept: CommandLine[] = [];
  next: for (const task of newestFirst) {
    for (const line of kept) if (sameCommand(line, task)) continue next;
    kept.push(task);
    if (kept.length >= limit) break;
  }
  return kept.map((task) => ({ command: task.command, args: [...task.args], cwd: task.cwd, label: task.label }));
}
