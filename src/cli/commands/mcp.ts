/** `backchannel mcp`: the MCP server on stdio, over the running hub or an own broker. */
import type { BackchannelBridge } from '../../bridge/contract.js';
import { findHub, type HubClient } from '../../client/discover.js';
import { HubTasks } from '../../client/hub-tasks.js';
import { localTasks } from '../../client/local-tasks.js';
import type { TaskService } from '../../client/tasks.js';
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
    let own: McpBackend;
    try {
      own = await ownOrHubBridge();
    } catch (error) {
      process.stderr.write(`backchannel mcp: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    const mcp = createMcpServer(own.bridge, own.tasks, readOwnVersion());
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
    await own.close();
    return EXIT.ok;
  },
};

/**
 * The hub's bridge, or a headless hub of our own (broker + control endpoint, no printed URL) — only
 * when this process can take the data directory's lock; a directory held by a broker whose hub
 * cannot be reached is refused with its holder's pid (data_dir_in_use), never opened twice.
 */
async function ownOrHubBridge(): Promise<McpBackend> {
  const hub = await findHub();
  if (hub) return onHub(hub);
  const { startHeadless } = await import('../../hub/headless/start.js');
  try {
    const headless = await startHeadless({ consoleLevel: false });
    return { bridge: headless.bridge, tasks: localTasks(headless.broker), close: () => headless.close() };
  } catch (error) {
    // Another hub started meanwhile: use it. One that holds the data directory may not listen yet.
    const deadline = Date.now() + ((error as { code?: unknown }).code === 'data_dir_in_use' ? 3000 : 0);
    for (;;) {
      const late = await findHub();
      if (late) return onHub(late);
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Where this MCP server's tasks are: a bridge for the calls and the seam that follows a task. */
interface McpBackend {
  bridge: BackchannelBridge;
  tasks: TaskService;
  close(): Promise<void>;
}

function onHub(hub: HubClient): McpBackend {
  const tasks = new HubTasks(hub, () => findHub());
  return { bridge: hub, tasks, close: () => tasks.close() };
}
