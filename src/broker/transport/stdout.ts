/**
 * The fallback channel: reads a child's stdout for `data: <json>` lines (SSE style) and turns every
 * other stdout/stderr line into log text. Same framing and validation as the socket; no token,
 * because the pipe belongs to the child alone.
 */
import type { Readable } from 'node:stream';
import { LineDecoder, STDOUT_PREFIX, ownCopy, preview, isPayload, type Payload } from '../../protocol/index.js';
import { readInbound } from './inbound.js';
import type { RejectCause } from '../../model/task.js';

/** Longest log line kept; the rest is cut (a log is for people, not for results). */
const MAX_LOG_LINE_CHARS = 4000;

export interface OutputHandlers {
  payload(payload: Payload): void;
  log(stream: 'stdout' | 'stderr', text: string): void;
  problem(kind: 'malformed' | 'rejected', detail: string, cause?: RejectCause): void;
  overflow(detail: string): void;
  /** Debugging aid (BACKCHANNEL_DEBUG=1): sees every `data:` line before it is parsed. */
  trace?(text: string): void;
}

/** The SSE field name; the space after it (STDOUT_PREFIX) is optional, as in SSE. */
const DATA_FIELD = STDOUT_PREFIX.trimEnd();
const OPTIONAL_SPACE = STDOUT_PREFIX.slice(DATA_FIELD.length);

/** Reads one stdout stream. Resolves `closed` when the stream has ended and the last line is handled. */
export function readStdout(stream: Readable, taskId: string, handlers: OutputHandlers, maxLineBytes: number): Promise<void> {
  const decoder = new LineDecoder(
    {
      line(text) {
        if (!text.startsWith(DATA_FIELD)) {
          if (text.length > 0) handlers.log('stdout', clip(text));
          return;
        }
        handlers.trace?.(text);
        const body = dataOf(text);
        const inbound = readInbound(body, taskId, 'stdout');
        if (!inbound.ok)
          return inbound.protocol ? handlers.overflow(inbound.detail) : handlers.problem(inbound.kind, inbound.detail, inbound.cause);
        const message = inbound.message;
        if (!isPayload(message)) return handlers.problem('malformed', `stdout: only payloads are read here: ${preview(body)}`);
        handlers.payload(message);
      },
      overflow(bytes) {
        handlers.overflow(`stdout line of ${bytes}+ bytes exceeds the ${maxLineBytes}-byte limit`);
      },
    },
    maxLineBytes,
  );
  return pump(stream, decoder);
}

/** Reads stderr into log lines. */
export function readStderr(stream: Readable, handlers: Pick<OutputHandlers, 'log'>, maxLineBytes: number): Promise<void> {
  const decoder = new LineDecoder(
    {
      line(text) {
        handlers.log('stderr', clip(text));
      },
      overflow(bytes) {
        handlers.log('stderr', `[a stderr line of ${bytes}+ bytes was dropped]`);
      },
    },
    maxLineBytes,
  );
  return pump(stream, decoder);
}

/** The value of a `data:` line (one optional space after the colon, as in SSE). */
function dataOf(line: string): string {
  const rest = line.slice(DATA_FIELD.length);
  return rest.startsWith(OPTIONAL_SPACE) ? rest.slice(OPTIONAL_SPACE.length) : rest;
}

function pump(stream: Readable, decoder: LineDecoder): Promise<void> {
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => decoder.push(chunk));
    stream.on('error', () => resolve());
    stream.on('close', () => {
      decoder.end();
      resolve();
    });
  });
}

/** Log lines are kept: cut, and copied so they do not pin the decoder's chunk text (see LineDecoder). */
function clip(text: string): string {
  return text.length > MAX_LOG_LINE_CHARS ? `${ownCopy(text.slice(0, MAX_LOG_LINE_CHARS))}… [${text.length} chars]` : ownCopy(text);
}
