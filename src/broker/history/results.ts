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
import { closeSync, constants, fstatSync, fsyncSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import {
  RESULT_INLINE_MAX_BYTES,
  RESULT_PREVIEW_CHARS,
  RESULT_SUMMARY_MAX_META_BYTES,
  type ResultSummary,
  type TaskSnapshot,
} from '../../model/task.js';
import type { FinalPayload } from '../../protocol/index.js';
import { ensureDataDir, NO_FOLLOW } from './data-dir.js';

export const RESULTS_DIR = 'results';
const { O_CREAT, O_EXCL, O_RDONLY, O_WRONLY } = constants;
const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | NO_FOLLOW;
/** Task ids become file names: only what a broker's ids (UUIDs) are made of. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const RESULT_FILE = /^([A-Za-z0-9][A-Za-z0-9_-]{0,127})\.json$/;

/** The summary of a serialized final payload. */
export function summarizeResult(payload: FinalPayload, json: string): ResultSummary {
  const summary: ResultSummary = {
    bytes: Buffer.byteLength(json),
    preview: freshCopy((JSON.stringify(payload.data) ?? '').slice(0, RESULT_PREVIEW_CHARS)),
    status: payload.status,
  };
  const meta = payload.meta === undefined ? undefined : JSON.stringify(payload.meta);
  if (meta !== undefined && meta.length <= RESULT_SUMMARY_MAX_META_BYTES) summary.meta = payload.meta;
  if (payload.attachments) summary.attachments = payload.attachments;
  return summary;
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
    const json = JSON.stringify(payload);
    if (Buffer.byteLength(json) <= RESULT_INLINE_MAX_BYTES) return undefined;
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
      return summarizeResult(payload, json);
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
      fd = openSync(file, O_RDONLY | NO_FOLLOW);
      const stat = fstatSync(fd);
      if (!stat.isFile()) throw new Error('not a regular file');
      if (typeof process.getuid === 'function' && stat.uid !== process.getuid())
        throw new Error(`it belongs to uid ${stat.uid}, not to us`);
      return JSON.parse(readFileSync(fd, 'utf8')) as FinalPayload;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why =
        code === 'ELOOP' ? 'it is a symlink (not followed)' : code === 'ENOENT' ? 'the file is missing' : (error as Error).message;
      this.warn(`result of task ${id}: cannot read ${file}: ${why}`);
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Removes a task's file (a symlink in its place is removed, never followed). */
  remove(id: string): void {
    const file = this.fileOf(id);
    if (file) rmSync(file, { force: true });
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
