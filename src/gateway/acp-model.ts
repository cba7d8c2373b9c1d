/**
 * Gateway models served by an ACP agent (`acp: true` beside `command`, docs/gateway.md): the task runs
 * the agent under the ACP adapter (the broker's acp kind, docs/acp.md), its door `gateway`. In bridge
 * mode the request's tools reach the task as for any command model (`TaskSpec.tools`); the adapter
 * offers them to the agent as an MCP server in session/new (the stdio relay) and refuses the agent's
 * own edit, delete, move and execute tools (src/acp/bridge.ts); host anchoring is the bridged turn's.
 *
 * An ACP agent's session lives in the adapter's process, which ends with the task: a later turn
 * replays the whole conversation instead of resuming (`resumable`), so nothing said is lost.
 */
import type { TaskSpec } from '../model/task.js';
import type { ModelRoute } from './config.js';

/** Whether the model is an ACP agent. */
export function isAcpRoute(route: ModelRoute): boolean {
  return route.kind === 'command' && route.acp === true;
}

/** Whether a session's next turn may resume the agent's own session (not an ACP agent's: see above). */
export function resumable(route: ModelRoute): boolean {
  return !isAcpRoute(route);
}

/** `spec` for an ACP model: the acp kind runs it under the adapter; the prompt is the input's `prompt`. */
export function withAcp<T extends TaskSpec>(route: ModelRoute, spec: T): T {
  return isAcpRoute(route) ? { ...spec, acp: true } : spec;
}
