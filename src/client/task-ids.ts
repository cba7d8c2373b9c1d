import type { BackchannelBridge } from '../bridge/contract.js';

/** A task id in full (a UUID). */
const WHOLE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The full id of the one task whose id starts with `prefix` (ids may be abbreviated in the task
 * commands and the MCP tools); throws with a message a person can act on.
 */
export async function resolveTaskId(bridge: BackchannelBridge, prefix: string): Promise<string> {
  // A whole id is looked up alone: no task list to fetch.
  if (WHOLE_ID.test(prefix)) {
    const found = await bridge.getTask(prefix).then(
      () => true,
      () => false,
    );
    if (found) return prefix;
  }
  const matches = (await bridge.listTasks()).filter((task) => task.id.startsWith(prefix));
  if (matches.length === 1) return matches[0]!.id;
  if (matches.length === 0) throw new Error(`No task with an id starting with "${prefix}"`);
  throw new Error(`"${prefix}" matches ${matches.length} tasks; give more of the id`);
}
