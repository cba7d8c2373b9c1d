/**
 * The caller's tools in bridge mode (./bridge.ts): their calls are the caller's to allow (they run on
 * the caller's side, behind its own permission prompts), so an agent's permission request for one of
 * them is allowed by policy, never asked. A request is for one when it is of kind `other` (what the
 * agents give an MCP server's tool) and its title names an offered tool as they write one:
 * `mcp__backchannel__<tool>` (Claude), `backchannel__<tool>`, `backchannel_<tool>`, `backchannel.<tool>`,
 * `backchannel/<tool>`, or `<tool>`. The title is the agent's to write, so it alone decides nothing: an
 * agent's own edit or command titled like the caller's tool keeps its kind, and the policy for it.
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
  if (offered.size === 0 || kind !== 'other') return false;
  for (const prefix of [`mcp__${server}__`, `${server}__`, `${server}_`, `${server}.`, `${server}/`]) {
    if (title.startsWith(prefix) && offered.has(title.slice(prefix.length).trim())) return true;
  }
  return offered.has(title.trim());
}
