/** The client versions the suite pins (the shared recordings were made with these). */
export const PINS = {
  claudeCode: ['@anthropic-ai/claude-code', '2.1.332'], // on Node 20, always pinned: a bare install picks 2.1.197
  codex: ['@openai/codex', '0.171.0'], // speaks only the Responses API
  opencode: ['opencode-ai', '1.18.33'],
  // ACP agents (docs/acp.md): Claude through the Claude Agent SDK (bundles Claude Code), Codex's ACP binary.
  claudeAgentAcp: ['@zed-industries/claude-agent-acp', '0.23.1'],
  codexAcp: ['@zed-industries/codex-acp', '0.16.0'],
  anthropicSdk: ['@anthropic-ai/sdk', '0.71.0'],
  mcpInspector: ['@modelcontextprotocol/inspector', '2.12.0'], // its CLI mode runs on Node 20 (npm warns: engines asks for 22)
  // Python packages (pip, from the configured index, into a venv): the official MCP SDK (it has the
  // 2025-11-25 Tasks types) and the SDKs whose pydantic models check the gateway's wire values in strict mode.
  pythonMcp: ['mcp', '2.3.0'],
  pythonOpenai: ['openai', '3.22.1'],
  pythonAnthropic: ['anthropic', '1.13.0'],
} as const;
