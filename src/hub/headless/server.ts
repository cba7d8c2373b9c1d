/**
 * `backchannel serve`'s HTTP server: the built panel plus the bridge as JSON endpoints and an SSE
 * event stream, on loopback only. Every request passes the checks in ../../loopback/security.ts first;
 * the panel's files come from the same `PanelFiles` the Electron protocol serves.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { open } from 'node:fs/promises';
import type { BackchannelBridge } from '../../bridge/contract.js';
import { API_PREFIX, EVENTS_PATH, TOKEN_HEADER } from '../../bridge/http-routes.js';
import { handleApi } from '../http/api.js';
import { headerValue, sendError, sendPage } from '../http/responses.js';
import { newToken, SECURITY_HEADERS, tokenMatches } from '../../loopback/security.js';
import { capConnectionsPerUser, type PeerLimits } from '../../loopback/peer-user.js';
import { defaultRendererDir, PanelFiles } from '../http/static-files.js';
import { EventStreams } from '../http/event-stream.js';
import { admitLoopback, listen, LOOPBACK_HOST } from '../http/mount-server.js';
import { mountAt, type HttpMount } from '../http/mounts.js';
import { STREAM_KEEP_ALIVE_MS } from '../../model/streams.js';

export interface PanelServerOptions {
  bridge: BackchannelBridge;
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Directory holding index.html, panel.js, panel.css. @default dist/renderer */
  rendererDir?: string;
  /** @default a new random token */
  token?: string;
  /** The app log, served as a page at LOG_PATH (its last LOG_PAGE_BYTES). */
  logPath?: string;
  /** Keep-alive comment interval on the event stream (proxies and browsers drop silent streams). @default STREAM_KEEP_ALIVE_MS */
  keepAliveMs?: number;
  /** Endpoints of other parts (MCP over HTTP): Host and Origin checked here, their own token checked by them. */
  mounts?: readonly HttpMount[];
}

export interface PanelServer {
  /** The URL to open, token included. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Ends every event stream and stops listening. */
  close(): Promise<void>;
}

/** Always bound here: the panel can start processes, so it is never reachable from the network. */
export const HOST = LOOPBACK_HOST;
/** Longer than browsers keep idle connections around, so a reused socket is not closed under a request. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/**
 * Open connections the owner's processes hold on the panel's port at most; more are closed as they
 * come. A panel tab holds its event stream and a few requests, so this is room for many tabs and
 * scripts, while a flood of idle connections (one reached 17,500 descriptors: docs/reliability.md, fault table) can no longer
 * use up the hub's file descriptors, which its tasks' sockets and pipes need too.
 */
export const MAX_PANEL_CONNECTIONS = 256;
/**
 * What other local users hold at most (each, and all together), so they cannot take the owner's
 * slots (X13). They have no token, so they are only ever refused; this is room for a browser's few.
 * Where users cannot be told apart (not Linux) everyone shares MAX_PANEL_CONNECTIONS.
 */
export const PANEL_PEER_LIMITS: PeerLimits = { owner: MAX_PANEL_CONNECTIONS, perOtherUser: 16, allOtherUsers: 64 };
/** A connection must send its request headers this soon (Node's default is 60 s): idle ones free their slot. */
const HEADERS_TIMEOUT_MS = 10_000;

/** Where the panel's "Open" shows the app log (headless: there is no OS viewer to hand it to). */
export const LOG_PATH = '/log';
/** The tail of the log a page shows: enough for the recent story, small enough to load at once. */
const LOG_PAGE_BYTES = 512 * 1024;

/** What every request handler needs; `port` is known once the server listens. */
interface ServerContext {
  readonly bridge: BackchannelBridge;
  readonly logPath: string | undefined;
  readonly files: PanelFiles;
  readonly streams: EventStreams;
  readonly token: string;
  readonly mounts: readonly HttpMount[];
  port: number;
}

export async function startPanelServer(options: PanelServerOptions): Promise<PanelServer> {
  const context: ServerContext = {
    bridge: options.bridge,
    logPath: options.logPath,
    files: PanelFiles.load(options.rendererDir ?? defaultRendererDir()),
    streams: new EventStreams(options.bridge, options.keepAliveMs ?? STREAM_KEEP_ALIVE_MS),
    token: options.token ?? newToken(),
    mounts: options.mounts ?? [],
    port: 0,
  };
  const server = createServer((req, res) => {
    handleRequest(context, req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'internal', error instanceof Error ? error.message : String(error));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  capConnectionsPerUser(server, PANEL_PEER_LIMITS);
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  const port = await listen(server, options.port ?? 0);
  context.port = port;
  return {
    url: `http://${HOST}:${port}/?token=${context.token}`,
    port,
    token: context.token,
    async close() {
      context.streams.endAll();
      for (const mount of context.mounts) await mount.close?.();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

async function handleRequest(context: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  const url = admit(context, req, res);
  if (!url) return;
  if (url instanceof MountedRequest) return url.mount.handle(req, res);
  if (url.pathname === EVENTS_PATH && req.method === 'GET') return context.streams.open(req, res);
  if (url.pathname.startsWith(API_PREFIX)) return handleApi(context.bridge, req, res, url.pathname, 'panel');
  if (url.pathname === LOG_PATH && req.method === 'GET') return serveLog(context, res);
  return serveFile(context, req, res, url.pathname);
}

/** A request for a mount: past the Host and Origin checks, its token is the mount's to check. */
class MountedRequest {
  constructor(readonly mount: HttpMount) {}
}

/**
 * The three checks of ../../loopback/security.ts, in order; answers a refused request itself and returns undefined.
 * A mount's request passes the first two here and is the mount's from then on.
 */
function admit(context: ServerContext, req: IncomingMessage, res: ServerResponse): URL | MountedRequest | undefined {
  const { port, token } = context;
  if (!admitLoopback(req, res, port)) return undefined;
  // A refused request's connection is closed with the answer: without the token it holds no slot.
  const keepAlive = res.shouldKeepAlive;
  res.shouldKeepAlive = false;
  const url = new URL(req.url ?? '/', `http://${HOST}:${port}`);
  const mount = mountAt(context.mounts, url.pathname);
  if (mount) {
    res.shouldKeepAlive = keepAlive;
    return new MountedRequest(mount);
  }
  const given = headerValue(req.headers[TOKEN_HEADER]) ?? url.searchParams.get('token');
  if (!tokenMatches(given, token)) {
    const message = 'Missing or wrong token: open the URL `backchannel serve` printed';
    if (!url.pathname.startsWith(API_PREFIX) && (req.headers.accept ?? '').includes('text/html')) sendPage(res, 401, message);
    else sendError(res, 401, 'invalid_request', message);
    return undefined;
  }
  res.shouldKeepAlive = keepAlive;
  return url;
}

/** The app log's tail as plain text (never HTML: log lines come from sub-agents). */
async function serveLog(context: ServerContext, res: ServerResponse): Promise<void> {
  if (!context.logPath) return sendError(res, 404, 'not_found', 'This server keeps no log file');
  let text: string;
  try {
    const handle = await open(context.logPath, 'r');
    try {
      const { size } = await handle.stat();
      const start = Math.max(0, size - LOG_PAGE_BYTES);
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(size - start), 0, size - start, start);
      text = buffer.subarray(0, bytesRead).toString('utf8');
      // Cut to whole lines, and say that the start is missing.
      if (start > 0) text = `… (the first ${start} bytes are in ${context.logPath})\n` + text.slice(text.indexOf('\n') + 1);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    text = `(${context.logPath} is empty: nothing has been logged yet)`;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(`Backchannel log: ${context.logPath}\n\n${text}`);
}

function serveFile(context: ServerContext, req: IncomingMessage, res: ServerResponse, pathname: string): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, 405, 'invalid_request', 'Method not allowed');
  const file = context.files.get(pathname, context.token);
  if (!file) return sendError(res, 404, 'not_found', `No such file: ${pathname}`);
  res.writeHead(200, file.headers);
  res.end(req.method === 'HEAD' ? undefined : file.body);
}
