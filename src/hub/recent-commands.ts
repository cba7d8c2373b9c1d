/** The panel's "recent" list: the most recent distinct command lines, newest first. */
import type { SubmitRequest } from '../bridge/contract.js';
import type { CommandLine } from '../model/task.js';

/** What makes two command lines the same one. */
export function commandKey(task: CommandLine): string {
  return JSON.stringify([task.command, task.args, task.cwd]);
}

/** The first `limit` distinct command lines of `newestFirst` (by command, args and cwd), read only as far as needed. */
export function distinctCommands(newestFirst: Iterable<CommandLine>, limit: number): SubmitRequest[] {
  const seen = new Set<string>();
  const out: SubmitRequest[] = [];
  for (const task of newestFirst) {
    const key = commandKey(task);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ command: task.command, args: [...task.args], cwd: task.cwd, label: task.label });
    if (out.length >= limit) break;
  }
  return out;
}
