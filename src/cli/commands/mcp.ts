/** `backchannel mcp`: the MCP server on stdio, over the running hub or a hub of its own. */
import { openClient, type BackchannelClient } from '../../client/index.js';
import { createMcpServer } from '../../mcp/server.js';
import { guardedStdioTransport } from '../../mcp/stdio-guard.js';
import { readOwnVersion } from '../../version.js';
import { EXIT, parseCommandLine, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel mcp

A Model Context Protocol server on stdin/stdout for coding agents (Claude Code, Cursor, VS Code, …):
tools to start background sub-agents and collect their results later, and MCP Tasks.

When a hub runs (the desktop app or \`backchannel serve\`), tasks go to it and show in its panel;
otherwise this process runs a broker of its own (history in the usual data directory) and serves
the control endpoint itself, so \`backchannel tasks\` and other MCP sessions see the same tasks.
The hub is found through the data directory (HOME or XDG_STATE_HOME), so an MCP host that starts
this with a bare environment still reaches it; a data directory another broker holds is never
opened a second time.
Set-up for each client: docs/mcp.md.

Options:
  -h, --help    show this help`;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine('mcp', argv, {}, HELP);
    if (typeof parsed === 'number') return parsed;
    let client: BackchannelClient;
    try {
      // Without a hub this process becomes it (broker + control endpoint, no printed URL), when it can
      // take the data directory; one another broker holds is refused with the holder's pid, never opened twice.
      client = await openClient({ withoutHub: 'become-hub' });
    } catch (error) {
      process.stderr.write(`backchannel mcp: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    const mcp = createMcpServer(client, readOwnVersion());
    // The SDK's transport behind a size guard: a message over 10 MiB is an error reply, not the end of the session.
    const transport = guardedStdioTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
      process.stdin.once('end', resolve);
    });
    await mcp.server.connect(transport);
    await closed;
    mcp.dispose();
    await mcp.server.close().catch(() => {});
    await client.close();
    return EXIT.ok;
  },
};
