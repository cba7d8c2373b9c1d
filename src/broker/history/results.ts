/**
 * Big results on disk: a finished task's final payload above RESULT_INLINE_MAX_BYTES is written once,
 * to `<dataDir>/results/<task_id>.json`, and history (memory, journal, snapshots) keeps only a
 * `ResultSummary`. The file is removed when the task leaves history; files no kept task refers to
 * are removed at start (orphans of a crash, of a compaction).
 *
 * The directory gets the data directory's rules (ours, 0700, not a symlink). A file is created new
 * (O_EXCL), 0600, never through a symlink (O_NOFOLLOW), and read back only when it is a regular file
 * of ours: a planted symlink or a foreign file is refused with a warning, never followed.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import {
  RESULT_INLINE_MAX_BYTES,
  RESULT_PREVIEW_CHARS,
  RESULT_SUMMARY_MAX_META_BYTES,
  type ResultSummary,
  type TaskSnapshot,
} from '../../model/task.js';
import { MAX_JSON_DEPTH, nestedDeeperThan, type FinalPayload } from '../../protocol/index.js';
import { payloadJson } from '../../model/payload-json.js';
import { ensureDataDir, NO_FOLLOW } from './data-dir.js';

export const RESULTS_DIR = 'results';
const { O_CREAT, O_EXCL, O_RDONLY, O_WRONLY } = constants;
const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | NO_FOLLOW;
/** Task ids become file names: only what a broker's ids (UUIDs) are made of. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const RESULT_FILE = /^([A-Za-z0-9][A-Za-z0-9_-]{0,127})\.json$/;

/** The summary of a serialized final payload (`bytes`: its UTF-8 length, when the caller has it). */
export function summarizeResult(payload: FinalPayload, json: string, bytes = Buffer.byteLength(json)): ResultSummary {
  const summary: ResultSummary = {
    bytes,
    preview: freshCopy(jsonPrefix(payload.data, RESULT_PREVIEW_CHARS)),
    status: payload.status,
  };
  const meta = payload.meta === undefined ? undefined : JSON.stringify(payload.meta);
  if (meta !== undefined && meta.length <= RESULT_SUMMARY_MAX_META_BYTES) summary.meta = payload.meta;
  if (payload.attachments) summary.attachments = payload.attachments;
  return summary;
}

/**
 * `(JSON.stringify(value) ?? '').slice(0, max)`, without serialising the rest: a 10 MB result's
 * preview cost a second whole `JSON.stringify` (~100 ms on a loaded machine) for 400 characters.
 * Walks plain JSON data (what a parsed payload is); anything else (toJSON, a class instance, a
 * bigint) takes the whole `JSON.stringify`, so the text is the same either way.
 */
export function jsonPrefix(value: unknown, max: number): string {
  const parts: string[] = [];
  let length = 0;
  const emit = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length >= max;
  };
  /** Emits `v`; true once `max` characters are out. Throws NOT_PLAIN for what it does not walk. */
  const walk = (v: unknown): boolean => {
    if (v === null) return emit('null');
    switch (typeof v) {
      case 'boolean':
        return emit(v ? 'true' : 'false');
      case 'number':
        return emit(Number.isFinite(v) ? String(v) : 'null');
      case 'string': {
        // The characters past the cut come out at or after `max` (each is one character or more of
        // JSON, after the opening quote): a surrogate pair cut in two is never part of the prefix.
        const need = max - length;
        if (v.length <= need + 1) return emit(JSON.stringify(v));
        return emit(JSON.stringify(v.slice(0, need + 1)).slice(0, -1));
      }
      case 'object':
        break;
      default:
        throw NOT_PLAIN;
    }
    if (Array.isArray(v)) {
      if (emit('[')) return true;
      for (let i = 0; i < v.length; i++) {
        if (i > 0 && emit(',')) return true;
        const item: unknown = v[i];
        if (item === undefined || typeof item === 'function' || typeof item === 'symbol' ? emit('null') : walk(item)) return true;
      }
      return emit(']');
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') throw NOT_PLAIN;
    if (emit('{')) return true;
    let first = true;
    for (const key of Object.keys(v)) {
      const item = (v as Record<string, unknown>)[key];
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
      if (!first && emit(',')) return true;
      first = false;
      if (emit(JSON.stringify(key)) || emit(':') || walk(item)) return true;
    }
    return emit('}');
  };
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return '';
  try {
    walk(value);
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    return (JSON.stringify(value) ?? '').slice(0, max);
  }
  return parts.join('').slice(0, max);
}

const NOT_PLAIN = new Error('not plain JSON data');

/** A task's result file, open for reading: its descriptor (the holder closes it) and its size in bytes. */
export interface ResultFile {
  fd: number;
  bytes: number;
}

/**
 * Opens `file` for reading when it is a regular file of ours, never through a symlink; throws (the
 * descriptor closed) otherwise.
 */
function openOwn(file: string): ResultFile {
  const fd = openSync(file, O_RDONLY | NO_FOLLOW);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error('not a regular file');
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) throw new Error(`it belongs to uid ${stat.uid}, not to us`);
    return { fd, bytes: stat.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Whether the file's first byte is `{` and its last `}`: what every payload's JSON is (cheap; not a parse). */
function framedAsObject({ fd, bytes }: ResultFile): boolean {
  if (bytes < 2) return false;
  const byte = Buffer.alloc(1);
  const at = (position: number): number => (readSync(fd, byte, 0, 1, position) === 1 ? byte[0]! : -1);
  return at(0) === 0x7b && at(bytes - 1) === 0x7d;
}

/** The warning for a result file that cannot be read (the reason a refused one is refused). */
function cannotRead(id: string, file: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === 'ELOOP' ? 'it is a symlink (not followed)' : code === 'ENOENT' ? 'the file is missing' : (error as Error).message;
  return `result of task ${id}: cannot read ${file}: ${why}`;
}

/**
 * A copy of `text` that shares no memory with the string it was cut from: V8 keeps a substring as a
 * slice of its parent, so a 400-character preview would hold the whole 10 MB JSON in memory.
 */
function freshCopy(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/** `snapshot` with its result replaced by `summary` (a copy; the input is not changed). */
export function withSummary(snapshot: TaskSnapshot, summary: ResultSummary): TaskSnapshot {
  const { result: _result, ...rest } = snapshot;
  return { ...rest, resultSummary: summary };
}

export class ResultStore {
  readonly dir: string;

  constructor(
    dataDir: string,
    private readonly warn: (message: string) => void,
  ) {
    this.dir = path.join(dataDir, RESULTS_DIR);
  }

  fileOf(id: string): string | undefined {
    return SAFE_ID.test(id) ? path.join(this.dir, `${id}.json`) : undefined;
  }

  /**
   * Writes `payload` (attachments as headers) to the task's file when it is big, and returns its
   * summary; undefined when it is small (it stays inline) or could not be written (then it stays
   * inline too, in memory, and the warning says why).
   */
  write(id: string, payload: FinalPayload): ResultSummary | undefined {
    // Usually serialized already, for the task's follower (../../model/payload-json.ts).
    const json = payloadJson(payload);
    // A string longer than the limit is over it in UTF-8 too (never fewer bytes than UTF-16 units):
    // a 10 MB result is not measured twice.
    if (json.length <= RESULT_INLINE_MAX_BYTES && Buffer.byteLength(json) <= RESULT_INLINE_MAX_BYTES) return undefined;
    const file = this.fileOf(id);
    if (!file) {
      this.warn(`result of task ${id}: the id is not a safe file name; its result stays in memory only`);
      return undefined;
    }
    let fd: number | undefined;
    try {
      ensureDataDir(this.dir, 'Results directory');
      fd = openSync(file, CREATE_NEW, 0o600);
      const data = Buffer.from(json);
      for (let offset = 0; offset < data.length;) offset += writeSync(fd, data, offset, data.length - offset);
      // On disk before the journal says so (the journal's `ended` record refers to this file).
      fsyncSync(fd);
      closeSync(fd);
      fd = undefined;
      return summarizeResult(payload, json, data.length);
    } catch (error) {
      if (fd !== undefined) {
        closeSync(fd);
        rmSync(file, { force: true });
      }
      const code = (error as NodeJS.ErrnoException).code;
      const why =
        code === 'EEXIST' || code === 'ELOOP'
          ? `${file} already exists (a symlink or a file someone planted?); it was not followed nor overwritten`
          : `${file} cannot be written (${(error as Error).message})`;
      this.warn(`result of task ${id}: ${why}; the result stays in memory only and is not kept in history`);
      return undefined;
    }
  }

  /** The whole payload of a task whose result is on disk; undefined (with a warning) when it is missing or refused. */
  read(id: string): FinalPayload | undefined {
    const file = this.fileOf(id);
    if (!file) return undefined;
    let fd: number | undefined;
    try {
      fd = openOwn(file).fd;
      const text = readFileSync(fd, 'utf8');
      if (nestedDeeperThan(text)) throw new Error(`nested deeper than ${MAX_JSON_DEPTH} levels`);
      return JSON.parse(text) as FinalPayload;
    } catch (error) {
      this.warn(cannotRead(id, file, error));
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /**
   * The task's file opened to be sent as it is, without reading it into memory (the hub's whole-result
   * route, src/hub/http/result-file.ts): checked as `read` checks it, and framed as one JSON object (a
   * file cut short is refused). The caller closes `fd`. Undefined (with a warning) when it is missing
   * or refused.
   */
  open(id: string): ResultFile | undefined {
    const file = this.fileOf(id);
    if (!file) return undefined;
    let fd: number | undefined;
    try {
      const opened = openOwn(file);
      fd = opened.fd;
      if (!framedAsObject(opened)) throw new Error('it does not hold one JSON object (cut short?)');
      fd = undefined;
      return opened;
    } catch (error) {
      this.warn(cannotRead(id, file, error));
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Removes a task's file (a symlink in its place is removed, never followed). */
  remove(id: string): void {
    const file = this.fileOf(id);
    // Most evicted tasks never had a file: an lstat that returns nothing is far cheaper than the ENOENT
    // error rmSync makes and drops (once per task). lstat: a planted symlink there goes too, as before.
    if (file && lstatSync(file, { throwIfNoEntry: false })) rmSync(file, { force: true });
  }

  /** Removes every result file whose task `keep` does not name; returns how many. */
  sweep(keep: (id: string) => boolean): number {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      const id = RESULT_FILE.exec(name)?.[1];
      if (id === undefined || keep(id)) continue;
      rmSync(path.join(this.dir, name), { force: true });
      removed += 1;
    }
    return removed;
  }
}
