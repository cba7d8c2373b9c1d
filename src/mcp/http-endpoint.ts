/**
 * What the MCP endpoint over HTTP is to the hub, shared by ./http.ts (the endpoint) and ./http-mount.ts (which loads
 * it lazily): its path, and the shape of the hub's mounts (src/hub/http/mounts.ts), which this front-end does not import.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Where the hub serves MCP. */
export const MCP_PATH = '/mcp';

/** One endpoint on the hub's server. */
export interface McpHttpEndpoint {
  readonly path: string;
  /** Serves one request to MCP_PATH (Host and Origin already checked). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Aborts the exchanges in flight. */
  close(): Promise<void>;
}
