/**
 * MCP over Streamable HTTP, for the hub to mount at MCP_PATH (through ./http-mount.ts, which loads this on first use;
 * the hub checks Host and Origin as for the panel before a request gets here; see src/loopback/security.ts):
 *
 * - A bearer token (`Authorization: Bearer …`), compared in constant time: the token of `mcpTokenFile()`, generated
 *   on the first start (0600) and printed then only. Without it: 401 with `WWW-Authenticate: Bearer`.
 * - 2026-07-28 requests (the `_meta` envelope) go to the SDK v2's `createMcpHandler` over the factory of
 *   ./modern-server.ts: server/discover, the Tasks extension, input requests, `subscriptions/listen` — except a
 *   listen for tasks (`notifications.taskIds`), which ./http-listen.ts serves (the SDK's router drops the field).
 * - 2025-era requests (`initialize` and the session's requests after it) go to the 2025-11-25 server, one per
 *   session (./http-legacy.ts), as a 2025-era stdio client's do: the tools and the 2025-11-25 MCP Tasks. Other
 *   2025-era requests (no session, not an `initialize`) keep the SDK v2's stateless fallback.
 * - A request body over MAX_BODY_BYTES is refused with 413 before it is parsed; a client that goes away aborts its
 *   exchange (a waiting run_task cancels its task, as on stdio).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import type { BackchannelClient } from '../client/index.js';
import { tokenMatches } from '../loopback/security.js';
import { MCP_PATH, type McpHttpEndpoint } from './http-endpoint.js';
import { LegacyHttpSessions } from './http-legacy.js';
import { HttpTaskListens } from './http-listen.js';
import { modernServerFactory } from './modern-server.js';
import type { Era } from './stdio-eras.js';
import { listensForTasks } from './task-listen.js';

/** The SDK's own bound on a POST body (DEFAULT_MAX_REQUEST_BODY_SIZE): a tool call's arguments fit many times over. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export function mcpHttpEndpoint(client: BackchannelClient, version: string, token: string): McpHttpEndpoint {
  // Its stateless fallback answers the 2025-era requests that are no session's (./http-legacy.ts serves the rest).
  const handler = createMcpHandler(modernServerFactory(client, version), { maxRequestBodySize: MAX_BODY_BYTES });
  const listens = new HttpTaskListens(client, { name: 'backchannel', version });
  const legacy = new LegacyHttpSessions(client, version);
  return {
    path: MCP_PATH,
    async handle(req, res) {
      if (!tokenMatches(bearerOf(req.headers.authorization), token)) {
        res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer realm="backchannel-mcp"' });
        res.end(
          JSON.stringify({ error: 'Missing or wrong bearer token: send Authorization: Bearer <the token backchannel serve printed>' }),
        );
        return;
      }
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
      const message = body && body.length <= MAX_BODY_BYTES ? parseJson(body) : undefined;
      if (listensForTasks(message)) return listens.serve(message, res);
      const aborted = new AbortController();
      res.once('close', () => aborted.abort());
      const request = toWebRequest(req, body, aborted.signal);
      // A body over the limit is the modern entry's to refuse (413), whatever it holds.
      const era = body && body.length > MAX_BODY_BYTES ? 'modern' : await eraOfRequest(request, message);
      const inSession = era === 'legacy' && legacy.serves(request, message);
      const response = inSession ? await legacy.handle(request, message) : await handler.fetch(request);
      await sendWebResponse(response, res);
    },
    close: async () => {
      listens.closeAll();
      await legacy.closeAll();
      await handler.close();
    },
  };
}

/**
 * The era of one HTTP request, as the SDK v2 routes it (`isLegacyRequest`: no per-request envelope — an `initialize`,
 * a session's requests, its GET and DELETE): the HTTP form of ./stdio-eras.ts' choice by the first message.
 */
async function eraOfRequest(request: Request, parsedBody: unknown): Promise<Era> {
  return (await isLegacyRequest(request.clone(), parsedBody)) ? 'legacy' : 'modern';
}

function bearerOf(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** The request's body, read whole (the SDK reads it whole too) up to one byte over MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    chunks.push(chunk);
    // One byte over is enough for the SDK to answer 413 itself; the rest is not read.
    if (bytes > MAX_BODY_BYTES) break;
  }
  return Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES + 1);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // the SDK answers it with its parse error
  }
}

/** The node request as a web `Request` over its body read already. */
function toWebRequest(req: IncomingMessage, body: Buffer | undefined, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    else if (value !== undefined) headers.set(name, value);
  }
  const url = `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`;
  const method = req.method ?? 'GET';
  if (body === undefined) return new Request(url, { method, headers, signal });
  return new Request(url, { method, headers, body, signal });
}

/** Writes a web `Response` (a JSON body or an event stream) to the node response, streaming. */
async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (!response.body) return void res.end();
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream);
  res.once('close', () => body.destroy());
  body.pipe(res);
  await new Promise<void>((resolve) => {
    body.once('end', resolve);
    body.once('close', resolve);
    body.once('error', resolve);
  });
}
