/**
 * Small HTTP helpers for the gateway: API-neutral errors (each API adapter renders its own body),
 * JSON bodies in and out under a size and time bound, and the key check.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { InvalidRequest } from './request.js';

/** Never reachable from the network: requests start processes on this machine. */
export const GATEWAY_HOST = '127.0.0.1';

/** Long chat histories are big, but not this big. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** What kind of error, in words every API maps to its own type names. */
export type ErrorKind =
  'invalid_request' | 'authentication' | 'permission' | 'not_found' | 'too_large' | 'rate_limit' | 'api' | 'unavailable' | 'timeout';

/** An error answered with `status`; the API adapter renders the body (OpenAI's or Anthropic's shape). */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly kind: ErrorKind,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** Extra headers, e.g. `Retry-After` on a 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * The parsed JSON body. Throws `InvalidRequest` (400) for an empty or broken body, `HttpError` 413
 * when too big, 408 when it does not arrive within `timeoutMs` (the connection is then closed).
 */
export async function readJson(req: IncomingMessage, timeoutMs: number): Promise<unknown> {
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (error: HttpError) => {
      clearTimeout(timer);
      req.removeAllListeners('data');
      req.resume(); // drop the rest; the server closes the connection after the answer
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new HttpError(408, `The request body did not arrive within ${timeoutMs} ms.`, 'invalid_request', 'body_timeout')),
      timeoutMs,
    );
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES)
        fail(new HttpError(413, `The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'too_large', 'body_too_large'));
      else chunks.push(chunk);
    });
    req.once('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  if (text.trim() === '') throw new InvalidRequest('The request body is empty: send a JSON object.');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidRequest(`The request body is not valid JSON (${(error as Error).message}).`);
  }
}

/**
 * Whether the request carries the key, as `Authorization: Bearer <key>` (OpenAI clients) or
 * `x-api-key: <key>` (Anthropic clients), compared in constant time. No key configured: it does.
 */
export function hasKey(apiKey: string | undefined, headers: IncomingHttpHeaders): boolean {
  if (apiKey === undefined) return true;
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
  const xApiKey = headers['x-api-key'];
  const given = [bearer, Array.isArray(xApiKey) ? xApiKey[0] : xApiKey];
  return given.some((value) => value !== undefined && sameKey(value.trim(), apiKey));
}

/** Throws a 401 unless the request carries the key (`hasKey`). */
export function checkKey(apiKey: string | undefined, headers: IncomingHttpHeaders): void {
  if (hasKey(apiKey, headers)) return;
  throw new HttpError(
    401,
    'Invalid or missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>` with the gateway key ' +
      '(printed at its first start; `api_key` in the config).',
    'authentication',
    'invalid_api_key',
  );
}

function sameKey(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return a.length === b.length && timingSafeEqual(a, b);
}
