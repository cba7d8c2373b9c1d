import type { BackchannelBridge } from '../bridge/contract.js';

/**
 * The full id of the one task whose id starts with `prefix` (ids may be abbreviated in the task
 * commands and the MCP tools); throws with a message a person can act on.
 */
export async function resolveTaskId(bridge: BackchannelBridge, prefix: string): Promise<string> {
  const matches = (await bridge.listTasks()).filter((task) => task.id.startsWith(prefix));
  if (matches.length === 1) return matches[0]!.id;
  if (matches.length === 0) throw new Error(`No task with an id starting with "${prefix}"`);
  throw new Error(`"${prefix}" matches ${matches.length} tasks; give more of the id`);
}
