/** Small HTTP helpers of the headless server: bounded body reading and JSON/HTML/error replies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../../model/errors.js';
import { joinedChunks, wellFormedJsonPieces } from './json-pieces.js';

/** The body, or undefined when it is over `maxBytes`. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooBig = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooBig ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A reply's JSON goes out in chunks of about this many characters, never one big string (./json-pieces.ts). */
const REPLY_CHUNK_CHARS = 16 * 1024;

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  // Well-formed for strict parsers: one lone surrogate in a label broke a whole list (Y51).
  const chunks = joinedChunks(wellFormedJsonPieces(value ?? null), REPLY_CHUNK_CHARS);
  res.writeHead(status, jsonHeaders(chunks.reduce((bytes, chunk) => bytes + chunk.length, 0)));
  if (chunks.length === 1) return void res.end(chunks[0]);
  res.cork();
  for (const chunk of chunks) res.write(chunk);
  res.end();
}

/** The headers of a JSON reply of `bytes` bytes (`sendJson`'s, and a result file's: ./result-file.ts). */
export function jsonHeaders(bytes: number): Record<string, string | number> {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': bytes, 'Cache-Control': 'no-store' };
}

/** A minimal page for a person who opened the panel without its token (static text, no markup from input). */
export function sendPage(res: ServerResponse, status: number, message: string): void {
  const escaped = message.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const body = Buffer.from(
    `<!doctype html><html lang="en"><meta charset="utf-8"><title>Backchannel</title><h1>Backchannel</h1><p>${escaped}.</p>` +
      '<p>Each start of the server prints a new link; old links stop working.</p></html>',
  );
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(body);
}

export function sendError(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  sendJson(res, status, { error: { code, message } });
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
