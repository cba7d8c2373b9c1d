/**
 * What `backchannel serve` needs of MCP over HTTP before the hub starts, kept light: the token file's place, and a
 * mount that loads the endpoint (./http.ts, with the SDK v2) once the hub started (and at the latest on its first
 * request), so a hub that cannot start — another holds its data directory — says so without loading the MCP SDK.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { homedir } from 'node:os';
import path from 'node:path';
import type { BackchannelClient } from '../client/index.js';
import { MCP_PATH, type McpHttpEndpoint } from './http-endpoint.js';

/** `$XDG_CONFIG_HOME/backchannel/mcp-token` (else `~/.config/…`): the bearer token of MCP over HTTP, mode 0600. */
export function mcpTokenFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(homedir(), '.config');
  return path.join(base, 'backchannel', 'mcp-token');
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
