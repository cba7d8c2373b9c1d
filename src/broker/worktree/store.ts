/**
 * The registry of the worktrees Backchannel made: one directory per task under the worktree root
 * (`<dataDir>/worktrees/<short id>/`), holding `record.json` (a WorktreeRecord), `tree/` (the git
 * worktree) and, once the agent ended, `change.diff`. Listing is reading that root: a worktree or a
 * branch that has no record here was not made by us and is never touched.
 *
 * The root gets the data directory's rules (ours, 0700, not a symlink); an entry is created new
 * (mkdir fails on an existing name), 0700; files are opened with O_NOFOLLOW and read only when they
 * are regular files of ours; an entry that is a symlink or someone else's is skipped, never followed.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import type { WorktreeRecord } from '../../model/change.js';
import { ensureDataDir, NO_FOLLOW } from '../history/data-dir.js';
import { shortTaskId } from '../../model/task-ids.js';

const { O_CREAT, O_EXCL, O_RDONLY, O_WRONLY } = constants;
const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | NO_FOLLOW;
export const RECORD_FILE = 'record.json';
export const DIFF_FILE = 'change.diff';
export const TREE_DIR = 'tree';
/** Entry names are short ids: hex only, so a name is never a path. */
const ENTRY_NAME = /^[0-9a-f]{6,32}$/;

/** The short id of a task (its branch is `backchannel/<short>`): the random tail of its UUID. */
export const shortIdOf = shortTaskId;

export class WorktreeStore {
  constructor(readonly root: string) {}

  /** Creates (or checks) the root; throws a BrokerError('data_dir') saying what is wrong. */
  ensureRoot(): void {
    ensureDataDir(this.root, 'Worktree directory');
  }

  /** A new entry directory for `short`; throws when one exists (EEXIST). */
  createEntry(short: string): string {
    if (!ENTRY_NAME.test(short)) throw new Error(`not a worktree id: ${short}`);
    this.ensureRoot();
    const dir = path.join(this.root, short);
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  }

  /** The entry directory of `short` when it is a real directory of ours, else undefined. */
  entryDir(short: string): string | undefined {
    if (!ENTRY_NAME.test(short)) return undefined;
    const dir = path.join(this.root, short);
    try {
      const stat = lstatSync(dir);
      if (!stat.isDirectory()) return undefined;
      if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return undefined;
      return dir;
    } catch {
      return undefined;
    }
  }

  /** Writes `record` (replacing the old one atomically: a new temp file, then rename). */
  writeRecord(record: WorktreeRecord): void {
    const dir = this.entryDir(path.basename(record.dir));
    if (!dir) throw new Error(`worktree entry ${record.dir} is missing or not ours`);
    const temp = path.join(dir, `.${RECORD_FILE}.${randomBytes(6).toString('hex')}`);
    writeNew(temp, JSON.stringify(record, null, 2) + '\n');
    renameSync(temp, path.join(dir, RECORD_FILE));
  }

  /** The record of entry `short`; undefined when it is missing, refused or does not parse. */
  readRecord(short: string): WorktreeRecord | undefined {
    const dir = this.entryDir(short);
    const text = dir && readOwnFile(path.join(dir, RECORD_FILE));
    if (!text) return undefined;
    try {
      const record = JSON.parse(text) as WorktreeRecord;
      return typeof record.taskId === 'string' && record.dir === dir ? record : undefined;
    } catch {
      return undefined;
    }
  }

  /** Every record, oldest first. */
  list(): WorktreeRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.root);
    } catch {
      return [];
    }
    return names
      .filter((name) => ENTRY_NAME.test(name))
      .map((name) => this.readRecord(name))
      .filter((record): record is WorktreeRecord => record !== undefined)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /** The record of task `taskId`. */
  find(taskId: string): WorktreeRecord | undefined {
    const record = this.readRecord(shortIdOf(taskId));
    return record?.taskId === taskId ? record : undefined;
  }

  /**
   * The entry's diff file made anew (the old one removed), open for writing: the caller streams the
   * diff into it (git's stdout) and closes it.
   */
  openNewDiff(short: string): number {
    const dir = this.entryDir(short);
    if (!dir) throw new Error(`worktree entry ${short} is missing or not ours`);
    const file = path.join(dir, DIFF_FILE);
    rmSync(file, { force: true });
    return openSync(file, CREATE_NEW, 0o600);
  }

  /** The diff file and its size when it is a regular file of ours, else undefined. */
  diffFile(short: string): { file: string; bytes: number } | undefined {
    const dir = this.entryDir(short);
    if (dir === undefined) return undefined;
    const file = path.join(dir, DIFF_FILE);
    let fd: number | undefined;
    try {
      fd = openSync(file, O_RDONLY | NO_FOLLOW);
      const stat = fstatSync(fd);
      if (!stat.isFile() || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) return undefined;
      return { file, bytes: stat.size };
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  readDiff(short: string): string | undefined {
    const dir = this.entryDir(short);
    return dir === undefined ? undefined : readOwnFile(path.join(dir, DIFF_FILE));
  }

  /** Removes an entry directory (a symlink inside is removed, never followed). */
  removeEntry(short: string): void {
    const dir = this.entryDir(short);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

function writeNew(file: string, text: string): void {
  const fd = openSync(file, CREATE_NEW, 0o600);
  try {
    const data = Buffer.from(text);
    for (let offset = 0; offset < data.length;) offset += writeSync(fd, data, offset, data.length - offset);
  } finally {
    closeSync(fd);
  }
}

/** A regular file of ours, never through a symlink; undefined otherwise. */
function readOwnFile(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, O_RDONLY | NO_FOLLOW);
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return undefined;
    return readFileSync(fd, 'utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
