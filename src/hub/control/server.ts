/**
 * The hub's control endpoint: the bridge contract (the calls and events the panel uses, from the one
 * route table) as HTTP over a Unix domain socket, plus a followed submission (./follow.ts). No token:
 * only the owner can reach the socket (see ./endpoint.ts). Front-ends in other processes — `backchannel
 * run`, the task commands, `backchannel mcp`, the gateway — talk to the running app or `serve`
 * through it, so their tasks share one broker, one panel and one history. The hub's HTTP mounts (MCP
 * over HTTP) are served here too, each checking its own token: a local client that speaks HTTP over a
 * Unix socket reaches them where only the owner can connect, and no flood on the TCP port locks it
 * out (X13).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { chmodSync, unlinkSync } from 'node:fs';
import { API_PREFIX, EVENTS_PATH, FOLLOW_PATH } from '../../bridge/http-routes.js';
import type { Logger } from '../../base/log.js';
import { handleApi } from '../http/api.js';
import { mountAt, type HttpMount } from '../http/mounts.js';
import { sendError } from '../http/responses.js';
import { EventStreams } from '../http/event-stream.js';
import { STREAM_KEEP_ALIVE_MS } from '../../model/streams.js';
import type { BrokerBridge } from '../broker-bridge.js';
import { handleFollow, handleWatch } from './follow.js';
import { claimEndpoint, preparePrivateDir } from '../../paths/control-socket.js';

export { HubRunningError } from '../../paths/control-socket.js';

export interface ControlServerOptions {
  bridge: BrokerBridge;
  /** The socket path (see ../../paths/control-endpoint.ts). */
  path: string;
  logger?: Logger;
  /** Keep-alive comment interval on event streams. @default STREAM_KEEP_ALIVE_MS */
  keepAliveMs?: number;
  /** The hub's HTTP mounts, read at each request (they are made once the hub is assembled). */
  mounts?: () => readonly HttpMount[];
}

export interface ControlServer {
  readonly path: string;
  /** Ends every event stream, stops listening and removes the socket file. */
  close(): Promise<void>;
}

/** Listens on `path`; throws `HubRunningError` when another hub already does. */
export async function startControlServer(options: ControlServerOptions): Promise<ControlServer> {
  const { bridge, path, logger } = options;
  preparePrivateDir(path);
  if (await claimEndpoint(path)) logger?.warn(`removed a stale control endpoint (a hub that crashed?): ${path}`);
  const streams = new EventStreams(bridge, options.keepAliveMs ?? STREAM_KEEP_ALIVE_MS);
  const server = createServer((req, res) => {
    handle(bridge, streams, options.mounts?.() ?? [], req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'internal', error instanceof Error ? error.message : String(error));
      else res.destroy();
    });
  });
  await listen(server, path);
  if (process.platform !== 'win32') chmodSync(path, 0o600);
  logger?.info(`control endpoint listening on ${path}`);
  let closing: Promise<void> | undefined;
  return {
    path,
    close() {
      closing ??= new Promise<void>((resolve) => {
        streams.endAll();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

async function handle(
  bridge: BrokerBridge,
  streams: EventStreams,
  mounts: readonly HttpMount[],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const pathname = new URL(req.url ?? '/', 'http://hub').pathname;
  const mount = mountAt(mounts, pathname);
  if (mount) return mount.handle(req, res);
  if (pathname === EVENTS_PATH && req.method === 'GET') return streams.open(req, res);
  if (pathname === FOLLOW_PATH && req.method === 'POST') return handleFollow(bridge, req, res);
  if (pathname.startsWith(FOLLOW_PATH + '/') && req.method === 'GET') {
    return handleWatch(bridge, decodeURIComponent(pathname.slice(FOLLOW_PATH.length + 1)), res);
  }
  if (pathname.startsWith(API_PREFIX)) return handleApi(bridge, req, res, pathname);
  sendError(res, 404, 'not_found', `No route ${req.method} ${pathname}`);
}

async function listen(server: Server, path: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Node removes the socket file on close(); a hub killed with SIGKILL leaves it (the next start removes it).
  server.once('close', () => {
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
  });
}
