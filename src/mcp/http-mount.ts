/**
 * What a hub needs of MCP over HTTP — `backchannel serve` (on its panel's port) and the desktop app (on a loopback
 * port of its own, src/hub/http/mount-server.ts) alike — kept light: the bearer token (read, or made 0600 at the
 * first start), and a mount that loads the endpoint (./http.ts, with the SDK v2) once the hub started (and at the
 * latest on its first request), so a hub that cannot start — another holds its data directory — says so without
 * loading the MCP SDK. The one place both hubs get MCP over HTTP from: neither builds the endpoint itself.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { homedir } from 'node:os';
import path from 'node:path';
import { clientOf, type BackchannelClient } from '../client/index.js';
import { readOrCreateSecret } from '../loopback/secret-file.js';
import { MCP_PATH, type McpHttpEndpoint } from './http-endpoint.js';

/** `$XDG_CONFIG_HOME/backchannel/mcp-token` (else `~/.config/…`): the bearer token of MCP over HTTP, mode 0600. */
export function mcpTokenFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(homedir(), '.config');
  return path.join(base, 'backchannel', 'mcp-token');
}

/** The bearer token of MCP over HTTP: its value, whether this call made it (print it then only), and its file. */
export interface McpToken {
  secret: string;
  created: boolean;
  file: string;
}

/** Reads the bearer token, or makes it (0600) on the first start; throws one line when the file cannot be either. */
export function readMcpToken(env: NodeJS.ProcessEnv = process.env): McpToken {
  const file = mcpTokenFile(env);
  return { ...readOrCreateSecret(file, 'bc-mcp-'), file };
}

/** The hub's mount (the shape of src/hub/http/mounts.ts) of the MCP endpoint, made on first use. */
export function mcpHttpMount(client: BackchannelClient, version: string, token: string): McpHttpEndpoint {
  let endpoint: Promise<McpHttpEndpoint> | undefined;
  const made = (): Promise<McpHttpEndpoint> =>
    (endpoint ??= import('./http.js').then(({ mcpHttpEndpoint }) => mcpHttpEndpoint(client, version, token)));
  // Loaded in the background once the hub holds its data directory: clients that give a server about two seconds to
  // connect (Claude Code's headless runs) find it ready.
  setImmediate(() => void made().catch(() => {}));
  return {
    path: MCP_PATH,
    handle: async (req: IncomingMessage, res: ServerResponse) => (await made()).handle(req, res),
    close: async () => {
      if (endpoint) await (await endpoint).close();
    },
  };
}

/** What a hub's mounts are made from (src/hub/assemble.ts `HubCore`): its broker and its bridge, with the presets. */
export interface McpHub {
  readonly broker: Parameters<typeof clientOf>[0];
  readonly bridge: NonNullable<Parameters<typeof clientOf>[1]>['bridge'];
}

/**
 * The hub's MCP over HTTP, for the assembly's `mounts` (`serve` and the desktop app alike): a client of the hub's own
 * broker through the hub's bridge, so its presets are offered (as over stdio), and MCP's submissions carry origin
 * `mcp`, so the run policy applies.
 */
export function mcpHttpMounts(version: string, token: string): (hub: McpHub) => McpHttpEndpoint[] {
  return (hub) => [mcpHttpMount(clientOf(hub.broker, { bridge: hub.bridge }), version, token)];
}
