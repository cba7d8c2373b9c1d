/**
 * Bridge mode through ACP (issue 44 §6, docs/gateway.md "Bridge mode"): when the task was offered its
 * caller's tools (`task.tools`, as the gateway offers a client's), the agent gets them as an MCP
 * server in session/new — Backchannel's stdio MCP relay (src/relay), whose every call is the task's
 * protocol tool call — and its own edit, delete, move and execute tools are refused at its permission
 * requests, so the caller's tools act (a request for one of the caller's tools is allowed: its caller
 * asks, ./bridge-tools.ts). The same rule as the CLI templates' bridge
 * (templates/_shared/bridge.mjs): no tools offered, nothing changes.
 *
 * Guarantees: the relay's socket is private (0700 directory) and closed with `close()`; the task's
 * token is never in the MCP server's command line or environment; a server the settings already name
 * (`bridge.mcpServer`) is kept as it is.
 */
import type { ToolHost } from '../relay/index.js';
import { offerBridgeTools } from './bridge-tools.js';
import type { AcpSettings, ToolKind } from './settings.js';

/** The agent's own tools that act on the caller's files or machine: refused in bridge mode. */
export const REFUSED_IN_BRIDGE_MODE: readonly ToolKind[] = ['edit', 'delete', 'move', 'execute'];

/**
 * Turns `settings` into bridge mode when `task` was offered tools: the relay as `bridge.mcpServer`
 * (unless one is named already) and the refused kinds' policy `reject`. Returns how to close the relay.
 */
export async function openBridge(task: ToolHost, settings: AcpSettings): Promise<() => Promise<void>> {
  if ((task.tools ?? []).length === 0) return async () => {};
  // Imported here, not bundled with the adapter (scripts/build-acp.mjs): the relay finds its server's
  // program beside its own module.
  const { RELAY_SERVER_NAME, openToolRelay } = await import('../relay/index.js');
  for (const kind of REFUSED_IN_BRIDGE_MODE) settings.approvals[kind] = 'reject';
  offerBridgeTools(
    (task.tools ?? []).map((tool) => tool.name),
    RELAY_SERVER_NAME,
  );
  if (settings.bridge) return async () => {};
  const relay = await openToolRelay(task);
  settings.bridge = { mcpServer: { command: relay.command, args: [...relay.args] } };
  return () => relay.close();
}
