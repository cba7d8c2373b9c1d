/**
 * A task's whole result sent from its file on disk as it is: no parse, no second serialization, a
 * few small buffers in memory however big it is (a 10 MB result parsed and serialized again grew the
 * hub's RSS by 16–19 MB a reply). The reply is byte for byte what `sendJson` makes of the parsed
 * payload: the file holds `JSON.stringify(payload)` (src/broker/history/results.ts), which the
 * serialization of its parse gives back unchanged, and the one rewrite `sendJson` makes
 * (`wellFormedJson`: each lone surrogate's escape `\udXXX` becomes `\ufffd`, as long) is made here on
 * the bytes as they pass.
 */
import { createReadStream } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { ResultFile } from '../../broker/history/results.js';
import { jsonHeaders } from './responses.js';

/**
 * Sends `file` as a 200 JSON reply and closes it. A file that changes size on the way, or fails to
 * read, ends the reply cut short (the connection is destroyed: the client sees an error, never a
 * wrong body).
 */
export async function sendResultFile(res: ServerResponse, file: ResultFile): Promise<void> {
  const source = createReadStream('', { fd: file.fd, start: 0, end: Math.max(file.bytes - 1, 0), autoClose: true });
  res.writeHead(200, jsonHeaders(file.bytes));
  try {
    await pipeline(source, wellFormedBytes(file.bytes), res);
  } catch {
    source.destroy();
    res.destroy();
  }
}

/** Passes the bytes through with `LoneEscapes`; throws when they are not `bytes` long. */
function wellFormedBytes(bytes: number): (source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer> {
  return async function* (source) {
    const escapes = new LoneEscapes();
    let total = 0;
    for await (const chunk of source) {
      total += chunk.length;
      const out = escapes.push(chunk);
      if (out.length > 0) yield out;
    }
    if (total !== bytes) throw new Error(`the result file changed size while it was sent (${total} of ${bytes} bytes)`);
    const rest = escapes.end();
    if (rest.length > 0) yield rest;
  };
}

const BACKSLASH = 0x5c;
/** `\ud`: where a surrogate's escape starts (JSON.stringify writes only lone surrogates as escapes). */
const SURROGATE_ESCAPE = Buffer.from('\\ud', 'latin1');
/** `\udXXX` is 6 bytes. */
const ESCAPE_BYTES = 6;
const EMPTY = Buffer.alloc(0);

/**
 * JSON text in chunks, with each lone surrogate's escape (`\ud800`–`\udfff`, after an even run of
 * backslashes) rewritten as `\ufffd`: `wellFormedJson`'s rewrite, on bytes that arrive in pieces. An
 * escape cut by a chunk's end is completed by the next: the last 5 bytes wait for it. The chunks are
 * rewritten in place.
 */
export class LoneEscapes {
  /** The last bytes seen, not passed on yet: an escape may start in them. */
  private carry: Buffer = EMPTY;
  /** The bytes passed on so far end in an odd run of backslashes (the next byte is escaped). */
  private oddRun = false;

  /** The bytes that can be passed on now (a view of `chunk`, or of it after the bytes held back). */
  push(chunk: Buffer): Buffer {
    const text = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const ready = Math.max(text.length - (ESCAPE_BYTES - 1), 0);
    for (let at = text.indexOf(SURROGATE_ESCAPE); at !== -1 && at < ready; at = text.indexOf(SURROGATE_ESCAPE, at + 1)) {
      if (surrogateDigits(text, at) && !this.escaped(text, at)) text.write('fffd', at + 2, 'latin1');
    }
    this.carry = Buffer.from(text.subarray(ready));
    const out = text.subarray(0, ready);
    this.passed(out);
    return out;
  }

  /** What was held back: the end of the text (too short for an escape to start in it). */
  end(): Buffer {
    const rest = this.carry;
    this.carry = EMPTY;
    return rest;
  }

  /** Whether the backslash at `at` is itself escaped: an odd run of backslashes before it (in `text` and before). */
  private escaped(text: Buffer, at: number): boolean {
    let run = 0;
    let i = at - 1;
    while (i >= 0 && text[i] === BACKSLASH) {
      run += 1;
      i -= 1;
    }
    const odd = run % 2 === 1;
    return i < 0 ? odd !== this.oddRun : odd;
  }

  /** Notes how the bytes passed on now end (the run of backslashes they end in, with the run before). */
  private passed(out: Buffer): void {
    let i = out.length - 1;
    while (i >= 0 && out[i] === BACKSLASH) i -= 1;
    const run = out.length - 1 - i;
    this.oddRun = i < 0 ? this.oddRun !== (run % 2 === 1) : run % 2 === 1;
  }
}

/** `text[at..]` is `\ud` then [89a-f] and two hex digits, lowercase, as `JSON.stringify` writes them. */
function surrogateDigits(text: Buffer, at: number): boolean {
  return isHex(text[at + 3]) && text[at + 3]! >= 0x38 && isHex(text[at + 4]) && isHex(text[at + 5]);
}

function isHex(byte: number | undefined): boolean {
  return byte !== undefined && ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66));
}
