/** `backchannel mcp`: the MCP server on stdio, over the running hub or a hub of its own. */
import { openClient, type BackchannelClient } from '../../client/index.js';
import { modernServerFactory } from '../../mcp/modern-server.js';
import { serveLegacy, type BackchannelMcp } from '../../mcp/server.js';
import { serveByEra } from '../../mcp/stdio-eras.js';
import { TaskListens } from '../../mcp/task-listen.js';
import { guardedStdioTransport } from '../../mcp/stdio-guard.js';
import { readOwnVersion } from '../../version.js';
import { EXIT, parseCommandLine, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel mcp

A Model Context Protocol server on stdin/stdout for coding agents (Claude Code, Cursor, VS Code, …):
tools to start background sub-agents and collect their results later, and MCP Tasks. It speaks
MCP 2026-07-28 (with the Tasks extension) and, to a client that opens with \`initialize\`, 2025-11-25.

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
    const version = readOwnVersion();
    // The SDK's transport behind a size guard: a message over 10 MiB is an error reply, not the end of the session.
    const transport = guardedStdioTransport();
    const closed = new Promise<void>((resolve) => process.stdin.once('end', resolve));
    let legacy: BackchannelMcp | undefined;
    const served = await serveByEra(transport, {
      // A client that opens with `initialize` (2025-11-25) gets the SDK v1 server; any other, the 2026-07-28 one.
      legacy: async (handoff) => {
        legacy = await serveLegacy(client, version, handoff);
      },
      modern: modernServerFactory(client, version),
      listens: new TaskListens(client, { name: 'backchannel', version }),
    });
    await closed;
    legacy?.dispose();
    await legacy?.server.close().catch(() => {});
    await served.close();
    await client.close();
    return EXIT.ok;
  },
};
