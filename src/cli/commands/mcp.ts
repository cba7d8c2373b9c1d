/** `backchannel mcp`: the MCP server on stdio, over the running hub or an own broker. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { BackchannelBridge } from '../../bridge/contract.js';
import { findHub } from '../../client/discover.js';
import { createMcpServer } from '../../mcp/server.js';
import { readOwnVersion } from '../../version.js';
import { EXIT, parseCommandLine, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel mcp

A Model Context Protocol server on stdin/stdout for coding agents (Claude Code, Cursor, VS Code, …):
tools to start background sub-agents and collect their results later, and MCP Tasks.

When a hub runs (the desktop app or \`backchannel serve\`), tasks go to it and show in its panel;
otherwise this process runs a broker of its own (history in the usual data directory) and serves
the control endpoint itself, so \`backchannel tasks\` and other MCP sessions see the same tasks.
Set-up for each client: docs/mcp.md.

Options:
  -h, --help    show this help`;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('mcp', argv, {}, HELP);
    if (typeof parsed === 'number') return parsed;
    const own = await ownOrHubBridge();
    const mcp = createMcpServer(own.bridge, readOwnVersion());
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
      process.stdin.once('end', resolve);
    });
    await mcp.server.connect(transport);
    await closed;
    mcp.dispose();
    await mcp.server.close().catch(() => {});
    await own.close();
    return EXIT.ok;
  },
};

/** The hub's bridge, or a headless hub of our own (broker + control endpoint, no printed URL). */
async function ownOrHubBridge(): Promise<{ bridge: BackchannelBridge; close(): Promise<void> }> {
  const hub = await findHub();
  if (hub) return { bridge: hub, close: async () => hub.close() };
  const { startHeadless } = await import('../../hub/headless/start.js');
  try {
    const headless = await startHeadless({ consoleLevel: false });
    return { bridge: headless.bridge, close: () => headless.close() };
  } catch (error) {
    // Another hub started meanwhile: use it.
    const late = await findHub();
    if (late) return { bridge: late, close: async () => late.close() };
    throw error;
  }
}
