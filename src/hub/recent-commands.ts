/** The panel's "recent" list: the most recent distinct command lines, newest first. */
import type { SubmitRequest } from '../bridge/contract.js';
import type { TaskSnapshot } from '../model/task.js';

/** What makes two command lines the same one. */
export function commandKey(task: TaskSnapshot): string {
  return JSON.stringify([task.command, task.args, task.cwd]);
}

/** Distinct by command, args and cwd; at most `limit`, newest first. */
export function recentCommands(tasks: readonly TaskSnapshot[], limit: number): SubmitRequest[] {
  const seen = new Set<string>();
  const out: SubmitRequest[] = [];
  const newestFirst = [...tasks].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  for (const task of newestFirst) {
    const key = commandKey(task);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ command: task.command, args: task.args, cwd: task.cwd, label: task.label });
    if (out.length >= limit) break;
  }
  return out;
}
