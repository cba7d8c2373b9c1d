/**
 * A reply's JSON in pieces: the same text `wellFormedJson` makes, cut between the members of the
 * value and of its lists (two levels), so that a big list — a page of 50 tasks is ~140 KB — is never
 * one string or one Buffer. V8 puts a string over 128 KiB in a memory mapping of its own and unmaps
 * it after the next collection; each such reply cost the hub a `mmap`, two `munmap`s and ~40 page
 * faults on fresh pages, and each of those waits for the memory map's lock, which the spawner
 * thread's `fork()` holds while it copies the hub (docs/performance.md, "Issue 48, round 6"). Pieces
 * of a few KB come from the young generation and Node's Buffer pool instead.
 */
import { wellFormedJsonText } from '../../model/well-formed.js';

/** How deep the value is cut: its members, and the members of its lists and objects. */
const CUT_DEPTH = 2;

/**
 * `wellFormedJson(value)` as pieces whose concatenation is that very text. Only plain objects and
 * arrays are cut (in `JSON.stringify`'s order, with its rules for `undefined`, functions and symbols);
 * anything else, and everything below `CUT_DEPTH`, is one piece. A string is never cut, so each
 * lone surrogate's escape is rewritten within its piece.
 */
export function wellFormedJsonPieces(value: unknown): string[] {
  const pieces: string[] = [];
  addPieces(value, 0, pieces);
  if (pieces.length === 0) pieces.push('null');
  return pieces.map(wellFormedJsonText);
}

function addPieces(value: unknown, depth: number, pieces: string[]): void {
  if (depth < CUT_DEPTH && Array.isArray(value) && !hasToJson(value)) return addArray(value, depth, pieces);
  if (depth < CUT_DEPTH && isPlainObject(value)) return addObject(value, depth, pieces);
  const json = JSON.stringify(value);
  if (json !== undefined) pieces.push(json);
}

function addArray(value: unknown[], depth: number, pieces: string[]): void {
  pieces.push('[');
  for (let i = 0; i < value.length; i++) {
    if (i > 0) pieces.push(',');
    const item = ownJson(value[i], String(i));
    // In a list, what JSON cannot write is `null`.
    if (isUnwritable(item)) pieces.push('null');
    else addPieces(item, depth + 1, pieces);
  }
  pieces.push(']');
}

function addObject(value: Record<string, unknown>, depth: number, pieces: string[]): void {
  let first = true;
  pieces.push('{');
  for (const key of Object.keys(value)) {
    const member = ownJson(value[key], key);
    // In an object, what JSON cannot write is left out.
    if (isUnwritable(member)) continue;
    pieces.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
    first = false;
    addPieces(member, depth + 1, pieces);
  }
  pieces.push('}');
}

/** What `JSON.stringify` writes for a member: its `toJSON(key)` when it has one (a Date's ISO string). */
function ownJson(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && hasToJson(value) ? (value as { toJSON(key: string): unknown }).toJSON(key) : value;
}

function isUnwritable(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/** An object `JSON.stringify` writes member by member: no `toJSON`, no prototype but Object's (or none). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && !hasToJson(value);
}

function hasToJson(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

/** Pieces joined into runs of at least `chars` characters (the last may be shorter), each as UTF-8 bytes. */
export function joinedChunks(pieces: readonly string[], chars: number): Buffer[] {
  const chunks: Buffer[] = [];
  let run: string[] = [];
  let length = 0;
  for (const piece of pieces) {
    run.push(piece);
    length += piece.length;
    if (length >= chars) {
      chunks.push(Buffer.from(run.join('')));
      run = [];
      length = 0;
    }
  }
  if (run.length > 0 || chunks.length === 0) chunks.push(Buffer.from(run.join('')));
  return chunks;
}
