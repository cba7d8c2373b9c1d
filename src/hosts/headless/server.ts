/**
 * `backchannel serve`'s HTTP server: the built panel plus the bridge as JSON endpoints and an SSE
 * event stream, on loopback only. Every request passes the checks in ./security.ts first.
 */
import { readFile, readdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import type { BackchannelBridge, BridgeEvent } from '../../bridge/contract.js';
import { dispatch, HTTP_STATUS, type BridgeErrorCode } from '../../bridge/calls.js';
import { API_PREFIX, EVENTS_PATH, parseRequest, TOKEN_HEADER } from '../../bridge/http-routes.js';
import { defaultRendererDir } from '../paths.js';
import { isAllowedHost, isAllowedOrigin, newToken, SECURITY_HEADERS, tokenMatches } from '../http/security.js';

export interface PanelServerOptions {
  bridge: BackchannelBridge;
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Directory holding index.html, panel.js, panel.css. @default dist/renderer */
  rendererDir?: string;
  /** @default a new random token */
  token?: string;
  /** Keep-alive comment interval on the event stream (proxies and browsers drop silent streams). @default 15000 */
  keepAliveMs?: number;
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
export const HOST = '127.0.0.1';
const MAX_BODY_BYTES = 1024 * 1024;
/** A client this far behind on the event stream is dropped; it reconnects and gets a full picture. */
const MAX_STREAM_BACKLOG_BYTES = 8 * 1024 * 1024;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

export async function startPanelServer(options: PanelServerOptions): Promise<PanelServer> {
  const { bridge } = options;
  const token = options.token ?? newToken();
  const rendererDir = options.rendererDir ?? defaultRendererDir();
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const files = await loadStaticFiles(rendererDir);
  const streams = new Set<ServerResponse>();
  let port = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'internal', error instanceof Error ? error.message : String(error));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    if (!isAllowedHost(req.headers.host, port)) {
      return sendError(res, 421, 'invalid_request', 'This server only answers to 127.0.0.1, localhost or [::1] on its own port');
    }
    const origin = req.headers.origin;
    if (!isAllowedOrigin(origin, port) || req.headers['sec-fetch-site'] === 'cross-site') {
      return sendError(res, 403, 'invalid_request', 'Cross-origin requests are not allowed');
    }
    const url = new URL(req.url ?? '/', `http://${HOST}:${port}`);
    const given = headerValue(req.headers[TOKEN_HEADER]) ?? url.searchParams.get('token');
    if (!tokenMatches(given, token)) {
      const message = 'Missing or wrong token: open the URL `backchannel serve` printed';
      if (!url.pathname.startsWith(API_PREFIX) && (req.headers.accept ?? '').includes('text/html')) return sendPage(res, 401, message);
      return sendError(res, 401, 'invalid_request', message);
    }

    if (url.pathname === EVENTS_PATH && req.method === 'GET') return openStream(req, res);
    if (url.pathname.startsWith(API_PREFIX)) return handleApi(req, res, url.pathname);
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendError(res, 405, 'invalid_request', 'Method not allowed');
    const name = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
    const file = files.get(name);
    if (!file) return sendError(res, 404, 'not_found', `No such file: ${url.pathname}`);
    // The page is served with the token written into its asset URLs (hex only, so safe in HTML).
    const body = name === 'index.html' ? Buffer.from(file.toString('utf8').replaceAll('__TOKEN__', token)) : file;
    res.writeHead(200, {
      'Content-Type': CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
      'Content-Length': body.length,
      'Cache-Control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    let body: unknown;
    if (req.method === 'POST' || req.method === 'PUT') {
      const type = req.headers['content-type'] ?? '';
      const raw = await readBody(req);
      if (raw === undefined) return sendError(res, 413, 'invalid_request', `Request body over ${MAX_BODY_BYTES} bytes`);
      if (raw.length > 0) {
        if (!type.toLowerCase().startsWith('application/json')) {
          return sendError(res, 415, 'invalid_request', 'Send JSON (Content-Type: application/json)');
        }
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          return sendError(res, 400, 'invalid_request', 'The request body is not valid JSON');
        }
      }
    }
    const call = parseRequest(req.method ?? 'GET', pathname, body);
    if (!call) return sendError(res, 404, 'not_found', `No API route ${req.method} ${pathname}`);
    const reply = await dispatch(bridge, call.method, call.args);
    if (reply.ok) return sendJson(res, 200, reply.value);
    return sendJson(res, HTTP_STATUS[reply.error.code], { error: reply.error });
  }

  function openStream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    streams.add(res);
    const unsubscribe = bridge.subscribe((event: BridgeEvent) => {
      if (res.writableLength > MAX_STREAM_BACKLOG_BYTES) {
        res.destroy();
        return;
      }
      res.write(`data: ${JSON.stringify(event)}\n\n`);
    });
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
    keepAlive.unref();
    const end = (): void => {
      clearInterval(keepAlive);
      unsubscribe();
      streams.delete(res);
    };
    req.on('close', end);
    res.on('close', end);
  }

  // Longer than browsers keep idle connections around, so a reused socket is not closed under a request.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  return {
    url: `http://${HOST}:${port}/?token=${token}`,
    port,
    token,
    async close() {
      for (const res of streams) res.end();
      streams.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function loadStaticFiles(dir: string): Promise<Map<string, Buffer>> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    throw new Error(`The panel is not built (${dir} is missing): run \`npm run build\` first`, { cause: error });
  }
  if (!names.includes('index.html')) throw new Error(`The panel is not built (${dir} has no index.html): run \`npm run build\``);
  // Read once at start: the set of servable files is fixed, so no request path ever reaches the file system.
  const files = new Map<string, Buffer>();
  for (const name of names) {
    if (CONTENT_TYPES[extname(name)]) files.set(name, await readFile(join(dir, name)));
  }
  return files;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooBig = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooBig ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value ?? null));
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': body.length,
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

/** A minimal page for a person who opened the panel without its token (static text, no markup from input). */
function sendPage(res: ServerResponse, status: number, message: string): void {
  const escaped = message.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const body = Buffer.from(
    `<!doctype html><html lang="en"><meta charset="utf-8"><title>Backchannel</title><h1>Backchannel</h1><p>${escaped}.</p>` +
      '<p>Each start of the server prints a new link; old links stop working.</p></html>',
  );
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(body);
}

function sendError(res: ServerResponse, status: number, code: BridgeErrorCode, message: string): void {
  sendJson(res, status, { error: { code, message } });
}
