/**
 * Bridge mode for the coding-CLI templates (claude-code, cursor-cli, codex): when the task was
 * offered tools (`task.tools`, docs/protocol.md §7), the CLI runs with Backchannel's stdio MCP relay
 * (`backchannel-agents/relay`) as its only MCP server, so it sees the caller's tools as MCP tools and
 * each call it makes goes to the caller as a protocol tool call. The CLI's own file and shell tools
 * are switched off by each template's flags. Shared by the three templates: this is the one copy,
 * which `backchannel new` vendors into a scaffolded project (template.json `vendor`).
 *
 * Guarantees:
 * - no tools offered: nothing is opened and nothing changes (`openBridge` returns undefined);
 * - the relay's socket and the config files written for the CLI live in the relay's private 0700
 *   directory, removed by `close()`; the task's token is in none of them, nor in the CLI's argv or env;
 * - files a CLI only reads from its workspace (Cursor's `.cursor/mcp.json`, `.cursor/cli.json`) are
 *   written there for the run and put back as they were by `close()`: a file that existed gets its
 *   own bytes back, one that did not is removed (and `.cursor/` with it when it was created here and
 *   is empty).
 */
import fs from 'node:fs';
import path from 'node:path';

/** How long a CLI waits on one call to the caller's tools: the caller may be a person approving an edit. */
export const TOOL_CALL_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * @param {import('backchannel-agents/agent-runtime').AgentTask} task
 * @returns {Promise<undefined | {
 *   relay: import('backchannel-agents/relay').ToolRelay,
 *   serverName: string,
 *   mcpConfigFile: string,
 *   writeWorkspaceFile: (file: string, text: string) => void,
 *   close: () => Promise<void>,
 * }>}
 */
export async function openBridge(task) {
  if (!Array.isArray(task.tools) || task.tools.length === 0) return undefined;
  // Loaded only in bridge mode: the relay brings the MCP SDK, which a plain run does not need.
  const { openToolRelay } = await import('backchannel-agents/relay');
  const relay = await openToolRelay(task);
  const mcpConfigFile = path.join(relay.dir, 'mcp.json');
  fs.writeFileSync(mcpConfigFile, JSON.stringify(relay.mcpConfig, null, 2), { mode: 0o600 });
  /** What to put back: file → its bytes before (undefined: it did not exist); directories created here. */
  const restore = new Map();
  const createdDirs = [];

  function writeWorkspaceFile(file, text) {
    const dir = path.dirname(file);
    if (!fs.existsSync(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      createdDirs.push(dir);
    }
    if (!restore.has(file)) restore.set(file, fs.existsSync(file) ? fs.readFileSync(file) : undefined);
    fs.writeFileSync(file, text);
  }

  let closing;
  return {
    relay,
    serverName: relay.serverName,
    mcpConfigFile,
    writeWorkspaceFile,
    close: () =>
      (closing ??= (async () => {
        for (const [file, before] of restore) {
          if (before === undefined) fs.rmSync(file, { force: true });
          else fs.writeFileSync(file, before);
        }
        for (const dir of createdDirs.reverse()) {
          try {
            fs.rmdirSync(dir); // only when empty: what the CLI left there is not ours to delete
          } catch {
            /* not empty, or gone */
          }
        }
        await relay.close();
      })()),
  };
}
