/**
 * The loopback checks every request to a hub's HTTP server passes first (Host, then Origin: ../../loopback/security.ts),
 * shared by `backchannel serve`'s panel server (../headless/server.ts) and the mount server below; and that mount
 * server: the hub's mounts (MCP over HTTP) on a loopback port of their own, for a hub that has no panel server (the
 * desktop app, whose panel is a window). A mount authenticates its requests itself; any other path is a 404.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAllowedHost, isAllowedOrigin, SECURITY_HEADERS } from '../../loopback/security.js';
import { mountAt, type HttpMount } from './mounts.js';
import { sendError } from './responses.js';

/** Always bound here: a mount can start processes, so it is never reachable from the network. */
export const LOOPBACK_HOST = '127.0.0.1';
/** Open connections at most: room for many clients, never all of the hub's file descriptors. */
const MAX_CONNECTIONS = 256;
/** A connection must send its request headers this soon: idle ones free their slot. */
const HEADERS_TIMEOUT_MS = 10_000;

/**
 * Answers a request whose Host is not this server's loopback name and port (421), or that comes from another origin
 * (403), and returns false; true when it may go on. A refused request's connection is closed with the answer.
 */
export function admitLoopback(req: IncomingMessage, res: ServerResponse, port: number): boolean {
  const keepAlive = res.shouldKeepAlive;
  res.shouldKeepAlive = false;
  if (!isAllowedHost(req.headers.host, port)) {
    sendError(res, 421, 'invalid_request', 'This server only answers to 127.0.0.1, localhost or [::1] on its own port');
    return false;
  }
  if (!isAllowedOrigin(req.headers.origin, port) || req.headers['sec-fetch-site'] === 'cross-site') {
    sendError(res, 403, 'invalid_request', 'Cross-origin requests are not allowed');
    return false;
  }
  res.shouldKeepAlive = keepAlive;
  return true;
}

export interface MountServer {
  readonly port: number;
  /** `http://127.0.0.1:<port><path>`. */
  urlOf(path: string): string;
  /** Closes every mount, then the server and its connections. */
  close(): Promise<void>;
}

/** Serves `mounts` on `port` of the loopback interface (0: a free one). */
export async function startMountServer(options: { mounts: readonly HttpMount[]; port?: number }): Promise<MountServer> {
  const { mounts } = options;
  let port = 0;
  const server = createServer((req, res) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    if (!admitLoopback(req, res, port)) return;
    const mount = mountAt(mounts, new URL(req.url ?? '/', `http://${LOOPBACK_HOST}:${port}`).pathname);
    if (!mount) return sendError(res, 404, 'not_found', `Nothing is served here but ${mounts.map((m) => m.path).join(', ')}`);
    mount.handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'internal', error instanceof Error ? error.message : String(error));
      else res.destroy();
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  port = await listen(server, options.port ?? 0);
  return {
    port,
    urlOf: (path) => `http://${LOOPBACK_HOST}:${port}${path}`,
    async close() {
      for (const mount of mounts) await mount.close?.();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Listens on loopback; resolves with the port (a free one for 0). */
export async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, LOOPBACK_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
