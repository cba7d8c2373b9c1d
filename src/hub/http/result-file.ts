/**
 * A task's whole result sent from its file on disk as it is: no parse, no second serialization, a
 * few small buffers in memory however big it is (a 10 MB result parsed and serialized again grew the
 * hub's RSS by 16–19 MB a reply). The reply is byte for byte what `sendJson` makes of the parsed
 * payload: the file holds `JSON.stringify(payload)` (src/broker/history/results.ts), which the
 * serialization of its parse gives back unchanged, and the one rewrite `sendJson` makes
 * (`wellFormedJson`: each lone surrogate's escape `\udXXX` becomes `\ufffd`, as long) is made here on
 * the bytes as they pass.
 */
import { closeSync, read } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { ResultFile } from '../../broker/history/results.js';
import { jsonHeaders } from './responses.js';

/** Bytes read at a time; two buffers of it, reused, are all a reply holds (no garbage per chunk). */
const CHUNK_BYTES = 256 * 1024;

/**
 * Sends `file` as a 200 JSON reply and closes it. A file that changes size on the way, or fails to
 * read, ends the reply cut short (the connection is destroyed: the client sees an error, never a
 * wrong body).
 */
export async function sendResultFile(res: ServerResponse, file: ResultFile): Promise<void> {
  res.writeHead(200, jsonHeaders(file.bytes));
  try {
    await copyFile(file, res);
    res.end();
  } catch {
    res.destroy();
  } finally {
    closeSync(file.fd);
  }
}

/**
 * Reads the file into one buffer while the other is written; each read goes after the bytes
 * `LoneEscapes` held back, copied to the buffer's start, so an escape cut by a read is whole.
 */
async function copyFile({ fd, bytes }: ResultFile, res: ServerResponse): Promise<void> {
  const buffers = [Buffer.allocUnsafe(HELD_BYTES + CHUNK_BYTES), Buffer.allocUnsafe(HELD_BYTES + CHUNK_BYTES)];
  const escapes = new LoneEscapes();
  let held = Buffer.alloc(0);
  let writing: Promise<void> = Promise.resolve();
  for (let position = 0, turn = 0; position < bytes; turn = 1 - turn) {
    const buffer = buffers[turn]!;
    held.copy(buffer, 0);
    const read = await readAt(fd, buffer.subarray(held.length, held.length + Math.min(CHUNK_BYTES, bytes - position)), position);
    if (read === 0) throw new Error(`the result file is shorter than when it was opened (${position} of ${bytes} bytes)`);
    position += read;
    const text = buffer.subarray(0, held.length + read);
    const ready = escapes.scan(text, position >= bytes);
    held = Buffer.from(text.subarray(ready));
    await writing;
    if (res.destroyed) throw new Error('the client went away');
    writing = writeTo(res, text.subarray(0, ready));
    // Awaited at the next turn; until then a failure must not count as unhandled.
    writing.catch(() => {});
  }
  await writing;
}

function readAt(fd: number, into: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, into, 0, into.length, position, (error, n) => (error ? reject(error) : resolve(n))));
}

/** Writes `chunk`; resolves once it is handed to the socket (its buffer may be reused then). */
function writeTo(res: ServerResponse, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const closed = (): void => reject(new Error('the reply was closed'));
    res.once('close', closed);
    res.write(chunk, (error) => {
      res.off('close', closed);
      if (error) reject(error);
      else resolve();
    });
  });
}

const BACKSLASH = 0x5c;
/** `\ud`: where a surrogate's escape starts (JSON.stringify writes only lone surrogates as escapes). */
const SURROGATE_ESCAPE = Buffer.from('\\ud', 'latin1');
/** `\udXXX` is 6 bytes. */
const ESCAPE_BYTES = 6;
/** The bytes at a piece's end an escape cut by it may start in. */
const HELD_BYTES = ESCAPE_BYTES - 1;

/**
 * JSON text in chunks, with each lone surrogate's escape (`\ud800`–`\udfff`, after an even run of
 * backslashes) rewritten as `\ufffd`, in place: `wellFormedJson`'s rewrite, on bytes that arrive in
 * pieces. An escape may be cut by a piece's end: `scan` holds back the last bytes of each piece, to
 * be given again, first, with the next.
 */
export class LoneEscapes {
  /** The bytes final so far end in an odd run of backslashes (the next byte is escaped). */
  private oddRun = false;

  /**
   * Rewrites the escapes of `text` (the bytes held back last time, then new ones) and returns how many
   * of its bytes are final: the rest (at most HELD_BYTES) comes again at the start of the next text.
   * `last`: there is no next text; every byte is final.
   */
  scan(text: Buffer, last = false): number {
    const ready = last ? text.length : Math.max(text.length - HELD_BYTES, 0);
    for (
      let at = text.indexOf(SURROGATE_ESCAPE);
      at !== -1 && at + ESCAPE_BYTES <= text.length;
      at = text.indexOf(SURROGATE_ESCAPE, at + 1)
    ) {
      if (at >= ready) break;
      if (surrogateDigits(text, at) && !this.escaped(text, at)) text.write('fffd', at + 2, 'latin1');
    }
    this.passed(text.subarray(0, ready));
    return ready;
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

  /** Notes how the final bytes end (the run of backslashes they end in, with the run before). */
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
