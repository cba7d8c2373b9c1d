/**
 * The stdio MCP relay (docs/coding-agents.md, bridge mode): a coding CLI run by a template sees the task's offered tools
 * as MCP tools, and each call becomes a protocol tool call. host.ts is the agent's side (import this
 * entry as `backchannel-agents/relay`); server.ts is the relay process the CLI starts.
 */
export { openToolRelay, type ToolHost, type ToolRelay } from './host.js';
export { RELAY_SERVER_NAME, RelayTool, RelayRequest, RelayAnswer } from './wire.js';
