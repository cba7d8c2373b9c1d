/** The client versions the suite pins (the shared recordings were made with these). */
export const PINS = {
  claudeCode: ['@anthropic-ai/claude-code', '2.1.332'], // on Node 20, always pinned: a bare install picks 2.1.197
  codex: ['@openai/codex', '0.171.0'], // speaks only the Responses API
  opencode: ['opencode-ai', '1.18.33'],
  anthropicSdk: ['@anthropic-ai/sdk', '0.71.0'],
  // The Python SDKs whose pydantic models check the gateway's wire values in strict mode (pip, into a venv).
  pythonOpenai: ['openai', '3.22.1'],
  pythonAnthropic: ['anthropic', '1.13.0'],
} as const;
