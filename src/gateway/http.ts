/** Small HTTP helpers for the gateway: OpenAI-shaped errors, JSON bodies in and out, the bearer key. */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorBody, type ErrorType, type OpenAIError } from './openai-shapes.js';
import { InvalidRequest } from './request.js';

/** Long chat histories are big, but not this big. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** An error answered with `status` and OpenAI's error body. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly type: ErrorType,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
  }

  get body(): OpenAIError {
    return errorBody(this.message, this.type, this.code, this.param);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The parsed JSON body. Throws `InvalidRequest` (400) for an empty or broken body, `HttpError` 413 when too big. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new HttpError(413, `The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'invalid_request_error', 'body_too_large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new InvalidRequest('The request body is empty: send a JSON object with `model` and `messages`.');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidRequest(`The request body is not valid JSON (${(error as Error).message}).`);
  }
}

/** Throws a 401 unless `Authorization: Bearer <apiKey>` (compared in constant time). No key configured: passes. */
export function checkBearer(apiKey: string | undefined, header: string | undefined): void {
  if (apiKey === undefined) return;
  const value = header ?? '';
  const given = Buffer.from(value.replace(/^Bearer\s+/i, ''));
  const wanted = Buffer.from(apiKey);
  if (!/^Bearer\s+/i.test(value) || given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
    throw new HttpError(
      401,
      'Invalid or missing API key: send `Authorization: Bearer <api_key from the gateway config>`.',
      'invalid_request_error',
      'invalid_api_key',
    );
  }
}
