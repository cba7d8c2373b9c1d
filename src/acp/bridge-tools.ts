/**
 * The caller's tools in bridge mode (./bridge.ts): their calls are the caller's to allow (they run on
 * the caller's side, behind its own permission prompts), so an agent's permission request for one of
 * them is allowed by policy, never asked. A request is for one when its title names an offered tool
 * as the agents write an MCP server's tool: `mcp__backchannel__<tool>` (Claude), `backchannel__<tool>`,
 * `backchannel_<tool>`, `backchannel.<tool>`, `backchannel/<tool>`, or `<tool>` of kind `other`.
 */
const offered = new Set<string>();
/** The MCP server's name in session/new (the relay's, `backchannel`). No import: the adapter's start stays light. */
let server = 'backchannel';

/** The caller's tools, as the MCP server `serverName` offers them (set once bridge mode is on). */
export function offerBridgeTools(names: readonly string[], serverName: string): void {
  for (const name of names) offered.add(name);
  server = serverName;
}

/** Whether a permission request with `title` and `kind` is for one of the caller's tools. */
export function isBridgeToolCall(title: string, kind: string): boolean {
  if (offered.size === 0) return false;
  for (const prefix of [`mcp__${server}__`, `${server}__`, `${server}_`, `${server}.`, `${server}/`]) {
    if (title.startsWith(prefix) && offered.has(title.slice(prefix.length).trim())) return true;
  }
  return kind === 'other' && offered.has(title.trim());
}
