/**
 * A size guard in front of the official SDK's stdio transport. The SDK's reader closes the transport
 * when one message passes its 10 MiB buffer, and `backchannel mcp` then exited 0 without a word —
 * cancelling every task when it was the hub. Here a message over MAX_MESSAGE_BYTES is dropped as it
 * streams in (never held whole), answered with a JSON-RPC error carrying its id when its head names
 * one, and the session goes on. Every other line reaches the SDK's transport unchanged.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The SDK's own limit for one stdio message (STDIO_DEFAULT_MAX_BUFFER_SIZE). */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
/** JSON-RPC's "Invalid Request". */
const INVALID_REQUEST = -32600;
/**
 * How much of each end of a dropped message is kept to find its id: some clients write `id` first,
 * the SDK's own client writes it last.
 */
const END_BYTES = 4096;

export interface OversizedMessage {
  bytes: number;
  /** The request's id, when the message's first or last bytes name one at its top level. */
  id: string | number | undefined;
}

/** Passes whole lines of at most `maxBytes`; calls `onOversized` for each longer one, which it drops. */
export class MessageSizeGuard extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private dropping: { bytes: number; head: Buffer; tail: Buffer } | undefined;

  constructor(
    private readonly maxBytes: number,
    private readonly onOversized: (message: OversizedMessage) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(0x0a, from);
      const end = newline < 0 ? chunk.length : newline + 1;
      this.accept(chunk.subarray(from, end), newline >= 0);
      from = end;
    }
    done();
  }

  private accept(piece: Buffer, endsLine: boolean): void {
    if (!this.dropping && this.pendingBytes + piece.length - (endsLine ? 1 : 0) > this.maxBytes) {
      const head = Buffer.from(Buffer.concat([...this.pending, piece.subarray(0, END_BYTES)]).subarray(0, END_BYTES));
      this.dropping = { bytes: this.pendingBytes, head, tail: Buffer.alloc(0) };
      this.pending = [];
      this.pendingBytes = 0;
    }
    if (this.dropping) {
      const dropping = this.dropping;
      dropping.bytes += piece.length;
      const joined = Buffer.concat([dropping.tail, piece.subarray(Math.max(0, piece.length - END_BYTES))]);
      dropping.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - END_BYTES)));
      if (endsLine) {
        this.dropping = undefined;
        const id = topLevelId(dropping.head.toString('utf8')) ?? lastTopLevelId(dropping.tail.toString('utf8'));
        this.onOversized({ bytes: dropping.bytes - 1, id });
      }
      return;
    }
    this.pending.push(piece);
    this.pendingBytes += piece.length;
    if (endsLine) {
      this.push(Buffer.concat(this.pending));
      this.pending = [];
      this.pendingBytes = 0;
    }
  }
}

const ID_VALUE = String.raw`("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)`;
/** `"id": <value>` as the last member of the top-level object: only the final `}` may follow it. */
const LAST_ID = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID_VALUE}\s*}\s*$`);

/** The id a message's last bytes give as its top-level object's last member (how the SDK's client writes it). */
export function lastTopLevelId(tail: string): string | number | undefined {
  const value = LAST_ID.exec(tail.replace(/\r?\n$/, ''))?.[1];
  return value === undefined ? undefined : (JSON.parse(value) as string | number);
}

/** The value of the `id` key of the top-level object that `head` begins, if it is a string or a number. */
export function topLevelId(head: string): string | number | undefined {
  let depth = 0;
  for (let at = 0; at < head.length; at++) {
    const char = head[at];
    if (char === '"') {
      const string = /^"(?:[^"\\]|\\.)*"/.exec(head.slice(at))?.[0];
      if (!string) return undefined;
      if (depth === 1 && string === '"id"') {
        const value = new RegExp(String.raw`^\s*:\s*${ID_VALUE}\s*[,}]`).exec(head.slice(at + string.length))?.[1];
        if (value !== undefined) return JSON.parse(value) as string | number;
      }
      at += string.length - 1;
    } else if (char === '{' || char === '[') depth += 1;
    else if (char === '}' || char === ']') depth -= 1;
  }
  return undefined;
}

/**
 * The SDK's stdio transport reading through a MessageSizeGuard: an oversized message is answered with
 * an Invalid Request error (and told on stderr), not a closed session.
 */
export function guardedStdioTransport(
  stdin: NodeJS.ReadableStream = process.stdin,
  stdout: NodeJS.WritableStream = process.stdout,
  maxBytes = MAX_MESSAGE_BYTES,
): StdioServerTransport {
  const guard = new MessageSizeGuard(maxBytes, ({ bytes, id }) => {
    const message = `message of ${bytes} bytes exceeds the ${maxBytes}-byte limit of backchannel mcp; it was not read`;
    process.stderr.write(`backchannel mcp: ${message}\n`);
    const reply = { jsonrpc: '2.0', id: id ?? null, error: { code: INVALID_REQUEST, message } };
    // Called only once stdin flows, after `transport` below exists.
    void transport.send(reply as unknown as JSONRPCMessage).catch(() => {});
  });
  stdin.pipe(guard);
  // Lines are whole and each at most maxBytes here; several may arrive in one chunk.
  const transport = new StdioServerTransport(guard, stdout as typeof process.stdout, { maxBufferSize: 4 * maxBytes });
  return transport;
}
