/**
 * NDJSON framing: one JSON value per line, `\n`-terminated (a trailing `\r` is tolerated).
 *
 * Splits on the newline *byte*: 0x0A never occurs inside a multibyte UTF-8 sequence, so a line is
 * decoded once, whole, and characters split across chunks cannot be corrupted. A line that spans
 * chunks is joined with a single Buffer.concat (no per-chunk string concatenation), which keeps a
 * 10 MB line to one copy before decode. The pending line is bounded by `maxLineBytes`.
 *
 * The complete lines inside one chunk (a chatty agent packs hundreds into 64 KiB) are decoded with
 * one toString call and split on '\n' in the string: the same text as decoding each line alone,
 * since the region starts and ends on newline bytes, at about half the cost per small line
 * (bench/framing.js). Lines handed out this way are slices of that region string; a handler that
 * keeps a line for long (a log) should copy it, or it keeps the region alive.
 *
 * Big lines that are pure ASCII (most JSON) are decoded as Latin-1 after a SIMD ASCII check: the same
 * string, about 6× less CPU than the UTF-8 decoder for 10 MB (see decodeText).
 *
 * Attachments (docs/protocol.md §4.1): a `line` handler may call `readRaw(n, done)`; the next `n`
 * bytes after that line are then copied into one Buffer (one copy, no decoding) and handed to `done`,
 * and line framing resumes after them.
 */

import { DEFAULT_MAX_LINE_BYTES } from './line-limit.js';

export { DEFAULT_MAX_LINE_BYTES };

const NEWLINE = 0x0a;
/** Below this, the ASCII check costs more than it saves. */
const ASCII_CHECK_MIN_BYTES = 64 * 1024;
const CARRIAGE_RETURN = 0x0d;

export interface LineDecoderEvents {
  /** One complete line, decoded as UTF-8, without its terminator. */
  line(text: string): void;
  /** A line grew past the limit; it is discarded up to its next newline. */
  overflow(bytesSeen: number): void;
}

/**
 * Raw bytes being read after an announcing line: copied into `target`, or (without one) handed to
 * `piece` as views of the chunks they arrive in.
 */
interface RawRead {
  readonly target: Buffer | undefined;
  readonly piece: ((bytes: Buffer) => void) | undefined;
  remaining: number;
  readonly done: () => void;
}

export class LineDecoder {
  private pieces: Buffer[] = [];
  private pendingBytes = 0;
  /** True while skipping the rest of an over-long line. */
  private discarding = false;
  private raw: RawRead | undefined;

  constructor(
    private readonly events: LineDecoderEvents,
    /** May be raised between lines (e.g. once a sender has authenticated). */
    public maxLineBytes: number = DEFAULT_MAX_LINE_BYTES,
  ) {}

  /** Bytes buffered for the current unfinished line. */
  get buffered(): number {
    return this.pendingBytes;
  }

  /** Raw bytes still expected by `readRaw` or `readRawPieces` (0 when reading lines). */
  get rawPending(): number {
    return this.raw ? this.raw.remaining : 0;
  }

  /**
   * From a `line` handler only: the next `bytes` bytes after the current line are raw, not lines.
   * They are collected into one Buffer handed to `done`; the caller bounds `bytes`.
   */
  readRaw(bytes: number, done: (bytes: Buffer) => void): void {
    if (this.raw) throw new Error('readRaw: raw bytes are already being read');
    if (bytes === 0) return done(Buffer.alloc(0));
    const target = Buffer.allocUnsafe(bytes);
    this.raw = { target, piece: undefined, remaining: bytes, done: () => done(target) };
  }

  /**
   * Like readRaw, without collecting: `piece` gets each part as it arrives, in order, as a view of
   * the chunk it came in (no copy; the chunk is not reused), then `done` is called.
   */
  readRawPieces(bytes: number, piece: (bytes: Buffer) => void, done: () => void): void {
    if (this.raw) throw new Error('readRaw: raw bytes are already being read');
    if (bytes === 0) return done();
    this.raw = { target: undefined, piece, remaining: bytes, done };
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      if (this.raw) start = this.fillRaw(chunk, start);
      else if (this.discarding) {
        const nl = chunk.indexOf(NEWLINE, start);
        if (nl === -1) return;
        this.discarding = false;
        start = nl + 1;
      } else start = this.takeLines(chunk, start);
    }
  }

  /** Takes raw bytes from `chunk[start…]`; returns where line framing resumes. */
  private fillRaw(chunk: Buffer, start: number): number {
    const raw = this.raw!;
    const n = Math.min(raw.remaining, chunk.length - start);
    if (raw.target) chunk.copy(raw.target, raw.target.length - raw.remaining, start, start + n);
    else raw.piece!(chunk.subarray(start, start + n));
    raw.remaining -= n;
    if (raw.remaining === 0) {
      this.raw = undefined;
      raw.done();
    }
    return start + n;
  }

  /** Emits the lines of `chunk[start…]` and keeps its unfinished end; returns where to go on (raw bytes may start earlier). */
  private takeLines(chunk: Buffer, start: number): number {
    const last = chunk.lastIndexOf(NEWLINE);
    if (last >= start) {
      if (this.pendingBytes > 0) {
        // The first newline ends the line carried over from earlier chunks.
        const nl = chunk.indexOf(NEWLINE, start);
        const total = this.pendingBytes + (nl - start);
        this.pieces.push(chunk.subarray(start, nl));
        const whole = Buffer.concat(this.pieces, total);
        this.pieces = [];
        this.pendingBytes = 0;
        this.emit(whole, 0, whole.length);
        start = nl + 1;
        if (this.raw) return start;
      }
      if (last >= start) {
        const resume = this.emitComplete(chunk, start, last);
        if (resume !== -1) return resume;
      }
      start = last + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.length - start;
      if (this.pendingBytes + rest > this.maxLineBytes) {
        const seen = this.pendingBytes + rest;
        this.pieces = [];
        this.pendingBytes = 0;
        this.discarding = true;
        this.events.overflow(seen);
        return chunk.length;
      }
      this.pieces.push(chunk.subarray(start));
      this.pendingBytes += rest;
    }
    return chunk.length;
  }

  /** Flushes a last line that had no terminator (the peer closed mid-line). Returns its byte length. */
  end(): number {
    const leftover = this.pendingBytes;
    if (leftover > 0) {
      const whole = Buffer.concat(this.pieces, leftover);
      this.pieces = [];
      this.pendingBytes = 0;
      this.emit(whole, 0, whole.length);
    }
    this.discarding = false;
    return leftover;
  }

  /**
   * Emits the lines of `chunk[from, to)`, where `to` is the index of a newline byte. A region that
   * fits the limit is decoded once (no line in it can be over the limit); a larger one, line by line.
   * Returns -1, or the offset after the line whose handler asked for raw bytes.
   */
  private emitComplete(chunk: Buffer, from: number, to: number): number {
    if (to - from > this.maxLineBytes) {
      for (let start = from; start <= to;) {
        const nl = chunk.indexOf(NEWLINE, start);
        this.emit(chunk, start, nl);
        start = nl + 1;
        if (this.raw) return start;
      }
      return -1;
    }
    const text = chunk.toString('utf8', from, to);
    for (let start = 0, index = 0; ; index++) {
      const nl = text.indexOf('\n', start);
      let end = nl === -1 ? text.length : nl;
      if (end > start && text.charCodeAt(end - 1) === CARRIAGE_RETURN) end -= 1;
      this.events.line(start === 0 && end === text.length ? text : text.slice(start, end));
      if (this.raw) return (nl === -1 ? to : newlineAfter(chunk, from, index)) + 1;
      if (nl === -1) return -1;
      start = nl + 1;
    }
  }

  private emit(buf: Buffer, start: number, end: number): void {
    if (end - start > this.maxLineBytes) {
      this.events.overflow(end - start);
      return;
    }
    if (end > start && buf[end - 1] === CARRIAGE_RETURN) end -= 1;
    this.events.line(decodeText(buf, start, end));
  }
}

/**
 * `buf[start, end)` as UTF-8 text. ASCII is also Latin-1, and Latin-1 decoding is a plain copy into
 * a one-byte string, so a big ASCII-only region skips the UTF-8 decoder (10 MB: ~1.5 ms against ~9.5 ms).
 */
export function decodeText(buf: Buffer, start: number, end: number): string {
  if (end - start >= ASCII_CHECK_MIN_BYTES && asciiCheck()(buf.subarray(start, end))) return buf.toString('latin1', start, end);
  return buf.toString('utf8', start, end);
}

type AsciiCheck = (bytes: Buffer) => boolean;
let isAscii: AsciiCheck | undefined;

/**
 * node:buffer's isAscii, looked up on first use rather than imported: an ESM import of node:buffer
 * cost every agent's start ~0.4 ms of CPU (the agent runtime bundles this file), for a check only
 * lines of 64 KB and more use. Node before 20.16 has no process.getBuiltinModule: there the module
 * is imported in the background, and lines decode as UTF-8 (the same text, slower) until it is in.
 */
function asciiCheck(): AsciiCheck {
  if (isAscii) return isAscii;
  const builtin = process.getBuiltinModule?.('node:buffer') as { isAscii: AsciiCheck } | undefined;
  if (builtin) return (isAscii = builtin.isAscii);
  isAscii = () => false;
  void import('node:buffer').then((m) => (isAscii = m.isAscii));
  return isAscii;
}

/** The offset of the newline byte ending line `index` (from 0) of the region starting at `from`. */
function newlineAfter(chunk: Buffer, from: number, index: number): number {
  let nl = from - 1;
  for (let i = 0; i <= index; i++) nl = chunk.indexOf(NEWLINE, nl + 1);
  return nl;
}

/** Encodes one message as a line. JSON.stringify escapes newlines inside strings, so the frame is safe. */
export function encodeLine(message: unknown): string {
  return JSON.stringify(message) + '\n';
}

/**
 * `tooDeep`: the value nests deeper than MAX_JSON_DEPTH — a protocol error, not a line to skip
 * (nothing a well-behaved agent sends looks like it).
 */
export type ParsedLine = { ok: true; value: unknown } | { ok: false; reason: string; tooDeep?: true };

/**
 * The deepest nesting of arrays and objects a message may have. Every walk of a value after
 * JSON.parse (structuredClone, JSON.stringify, validation, the panel's rendering) recurses: one
 * result nested ~3,000 deep in a 6 KB line broke every task listing with "Maximum call stack size
 * exceeded", also after a restart (docs/reliability.md, fault X7). 128 is serde_json's default limit.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * True when the JSON `text` nests arrays and objects deeper than `max`. One pass over the text,
 * skipping strings, before anything parses it (so nothing recurses that deep at all). It runs on
 * every payload line: a long string is skipped with native `indexOf` rather than a character at a
 * time (a 10 MB result: 0.2 ms instead of 33 ms, against JSON.parse's 70 ms).
 */
export function nestedDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  // Deeper than `max` needs more than `max` opening brackets.
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = closingQuote(text, i + 1);
      if (i < 0) return false;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** Past this many characters a string's end is looked for with `indexOf`; short ones are cheaper by hand. */
const SHORT_STRING = 32;

/** The index of the quote that ends the string starting at `from`, or -1 when it never ends. */
function closingQuote(text: string, from: number): number {
  let i = from;
  for (const near = Math.min(text.length, from + SHORT_STRING); i < near; i++) {
    const d = text.charCodeAt(i);
    if (d === 0x5c) i++;
    else if (d === 0x22) return i;
  }
  // From `i` on nothing is read yet: a quote is escaped when an odd run of backslashes since `i` precedes it.
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return -1;
    let slashes = 0;
    while (quote - 1 - slashes >= i && text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return quote;
    i = quote + 1;
  }
}

/**
 * Valid JSON nested deeper than MAX_JSON_DEPTH holds more than that many opening brackets and as
 * many closing ones: a line that parses and is no longer than this cannot be too deep.
 */
const SHALLOW_BY_LENGTH = 2 * MAX_JSON_DEPTH + 1;

/**
 * JSON.parse with the failure turned into a short reason (the raw text is never echoed whole); a
 * line nested too deep is refused as `tooDeep` whether it parses or not.
 *
 * V8's JSON.parse is iterative (it builds a 1,000,000-deep array without a stack overflow), so it
 * runs first, and the depth scan only where its answer can differ: on a line that failed to parse,
 * or one longer than SHALLOW_BY_LENGTH. A progress line (~200 bytes) skips the scan, which cost 70%
 * of the parse itself (docs/performance.md, 2026-12-07). The results are the same as scanning first.
 */
export function parseLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    if (nestedDeeperThan(text)) return tooDeep(text);
    return { ok: false, reason: `malformed JSON (${(error as Error).message.slice(0, 80)}): ${preview(text)}` };
  }
  if (text.length > SHALLOW_BY_LENGTH && nestedDeeperThan(text)) return tooDeep(text);
  return { ok: true, value };
}

function tooDeep(text: string): ParsedLine {
  return { ok: false, reason: `nested deeper than ${MAX_JSON_DEPTH} levels: ${preview(text)}`, tooDeep: true };
}

/** The first 100 characters of a message, for logs (the design's debugging advice). */
export function preview(text: string, max = 100): string {
  const clean = text.replace(/[\u0000-\u001f\u007f]/g, '\uFFFD');
  return clean.length > max ? `${ownCopy(clean.slice(0, max))}… (${text.length} chars)` : ownCopy(clean);
}

/**
 * A string that shares no memory with `text`. A line from LineDecoder can be a slice of a whole
 * chunk's text; what is kept for long (log lines, previews) must not pin that chunk.
 */
export function ownCopy(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}
