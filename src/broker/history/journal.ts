/**
 * Append-only NDJSON journal of task lifecycle events, read back at start to rebuild history.
 *
 * Writes are batched per tick into one write(). `durable()` is the group commit: it resolves once
 * every record appended so far is written and fsynced, and every caller waiting meanwhile shares the
 * one fsync of the next batch — so the broker reports a start or a result only after its record is on
 * disk (docs/reliability.md, "Durable before reported") without one fsync per task. A line cut short
 * by power loss is skipped on read with a warning. Write failures (disk full, read-only) are
 * reported once and never stop the broker: `durable()` then resolves at once (nothing more can be
 * made durable, and the tasks keep running).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsync, fsyncSync, openSync, readSync, renameSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isFinished, RESULT_INLINE_MAX_BYTES, type LogLine, type TaskOrigin, type TaskSnapshot, type TaskSpec } from '../../model/task.js';
import type { Logger } from '../log.js';
import type { ChangeSummary, WorktreeInfo } from '../../model/change.js';
import { ensureDataDir, NO_FOLLOW } from './data-dir.js';
import { recordProblem } from './record-shape.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../protocol/index.js';

const { O_APPEND, O_CREAT, O_EXCL, O_RDONLY, O_WRONLY } = constants;
/** The journal and its temp file: never through a symlink; the temp file always new (O_EXCL). */
const APPEND = O_WRONLY | O_APPEND | O_CREAT | NO_FOLLOW;
const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | NO_FOLLOW;

export const JOURNAL_FILE = 'journal.ndjson';
/**
 * Room kept for the journal on its disk: on a full disk (ENOSPC) it is given back and the batch
 * written again, so the records of the tasks that end meanwhile are kept — a task that succeeded
 * was `interrupted` after a restart, and the next one missing (docs/reliability.md, fault X12). Made again at the
 * next start when there is room.
 */
export const RESERVE_FILE = 'journal.reserve';
const RESERVE_BYTES = 64 * 1024;
/**
 * On a disk where the journal keeps its reserve, new tasks are refused while less than this is free
 * (docs/reliability.md, fault X12): the tasks already running end into what is left and the 64 KiB reserve (~30 small
 * endings and more), so no caller is told of a result that is not on disk. (A disk too small for the
 * reserve runs as before.)
 */
export const MIN_FREE_BYTES = 32 * 1024;
/** How long one look at the disk's free space stands for (a burst of submissions costs one statfs). */
const ROOM_CHECK_MS = 250;
/** Compact when the file grows past this. */
export const DEFAULT_JOURNAL_MAX_BYTES = 16 * 1024 * 1024;

/** What is kept of a task spec in history: enough to show it and to run it again. */
export interface StoredSpec {
  command: string;
  args: string[];
  cwd: string;
  label: string;
  timeoutMs?: number;
  heartbeatTimeoutMs?: number;
  retries?: number;
  tags?: Record<string, string>;
  /** Kept only when small (see MAX_STORED_INPUT_BYTES). */
  input?: unknown;
  /** The door it came through: a Retry is judged by the run policy as the first run was. */
  origin?: TaskOrigin;
  /** A coding task runs again in a worktree of its own, never in the user's checkout. */
  worktree?: TaskSpec['worktree'];
  parent?: string;
  /** An ACP task runs under the adapter again (docs/acp.md). */
  acp?: TaskSpec['acp'];
}

export type JournalRecord =
  | { e: 'queued'; id: string; at: string; spec: StoredSpec; maxAttempts: number }
  | { e: 'attempt'; id: string; at: string; attempt: number; pid?: number; pidStart?: string }
  | { e: 'progress'; id: string; at: string; progress?: number; partial?: unknown }
  | { e: 'ended'; id: string; at: string; task: TaskSnapshot; spec?: StoredSpec }
  /**
   * The decided attempt's processes are gone. Only what changed since `ended` — the exit code and
   * signal — not the snapshot again: writing it again wrote every result twice.
   */
  | { e: 'exited'; id: string; at: string; exitCode?: number | null; signal?: string | null }
  /** A coding task's worktree was made (`worktree`), or its change recorded (`change`, before `exited`). */
  | { e: 'worktree'; id: string; at: string; worktree?: WorktreeInfo; change?: ChangeSummary };

export interface HistoryEntry {
  snapshot: TaskSnapshot;
  spec: StoredSpec;
  /** An interrupted task's agent as last recorded: pid and process start time (see process/start-time.ts). */
  orphan?: { pid: number; startTime: string };
  /**
   * Not written to the journal. A task that finished in this broker and moved out of memory early
   * (its big result went to disk) keeps its log and its attachments' content here, as it would have
   * as a live task, until it leaves history.
   */
  retired?: { log: LogLine[]; attachments?: Map<string, string | Uint8Array>; retry?: RetrySpec };
}

/** What a Retry needs of a retired task's spec beyond its StoredSpec (see `retrySpec` in records.ts). */
export type RetrySpec = Pick<TaskSpec, 'env' | 'askTimeoutMs' | 'taskIdArg' | 'estimatedTokens' | 'preset' | 'retries' | 'tools'>;

export interface LoadResult {
  entries: HistoryEntry[];
  skippedLines: number;
  /**
   * Tasks whose `ended` record with an inline result had a line longer than RESULT_INLINE_MAX_BYTES:
   * only they can hold a result that belongs in its file (see `keepResultFiles` in recovery.ts). A
   * result is written into its line as the JSON it is measured as, so a shorter line holds a smaller one.
   */
  longResults: Set<string>;
}

/**
 * A batch up to this size is written with `writeSync` on the loop, and only its fsync goes to the
 * thread pool: into the page cache it takes microseconds, and the promise's round trip through the
 * pool cost more than the write (docs/performance.md, "Issue 48, round 6"). A bigger one (an
 * `ended` record with a result near RESULT_INLINE_MAX_BYTES, many of them) is written off the loop.
 */
export const SYNC_WRITE_MAX_BYTES = 64 * 1024;

/** fsync(2) of `fd` on the thread pool: the callback form, one request object less than FileHandle.sync(). */
function fsyncOf(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

/** A journal over the size limit is compacted when it holds more than this many records per task. */
const COMPACTION_RATIO = 2;

export class Journal {
  readonly file: string;
  private handle: FileHandle | undefined;
  private queue: string[] = [];
  private syncRequested = false;
  /** Callers of `durable()` waiting for the next fsync (group commit). */
  private syncWaiters: Array<() => void> = [];
  /** Bytes written since the last fsync. */
  private unsynced = false;
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  private bytes = 0;
  /** Records and tasks the last `load()` read: how much a compaction would shrink the file. */
  private loaded = { records: 0, tasks: 0 };
  private failed: string | undefined;
  /** The reserve's path while it is kept (see RESERVE_FILE). */
  private reserve: string | undefined;
  /** The reserve was made at start: the disk had room, and new tasks are refused before it is full. */
  private keptRoom = false;
  private room: { at: number; problem: string | undefined } = { at: 0, problem: undefined };

  constructor(
    dir: string,
    private readonly logger: Logger,
    private readonly maxBytes = DEFAULT_JOURNAL_MAX_BYTES,
  ) {
    this.file = path.join(dir, JOURNAL_FILE);
  }

  /** Why writing stopped working, if it did. */
  get error(): string | undefined {
    return this.failed;
  }

  /**
   * Why a new task must not start now, on a disk where the reserve was made: less than MIN_FREE_BYTES
   * is free, or the reserve was given back to a full disk (it is made again once there is room for
   * it); undefined while there is room.
   */
  roomProblem(): string | undefined {
    if (!this.keptRoom) return undefined;
    const now = Date.now();
    if (now - this.room.at < ROOM_CHECK_MS) return this.room.problem;
    let problem: string | undefined;
    try {
      const dir = path.dirname(this.file);
      let free = freeBytes(dir);
      if (!this.reserve && free >= MIN_FREE_BYTES + RESERVE_BYTES) {
        this.keepReserve();
        free = freeBytes(dir);
      }
      if (!this.reserve || free < MIN_FREE_BYTES)
        problem = `the disk of the history (${dir}) is full (${Math.floor(free / 1024)} KiB free): new tasks are refused until some space is freed, so that no result is reported that is not on disk`;
    } catch {
      problem = undefined; // cannot tell: the journal's own errors say what goes wrong
    }
    this.room = { at: now, problem };
    return problem;
  }

  /** Reads history. Tasks without an `ended` record were running when the broker died: `interrupted`. */
  load(): LoadResult {
    const entries = new Map<string, HistoryEntry>();
    const longResults = new Set<string>();
    this.loaded = { records: 0, tasks: 0 };
    let skippedLines = 0;
    let lineNumber = 0;
    const apply = (line: string, bytes: number): void => {
      lineNumber += 1;
      if (line.trim() === '') return;
      let record: unknown;
      // A record nested too deep (a result written before payloads were capped) would break every listing.
      const tooDeep = moreOpenersThan(line, MAX_JSON_DEPTH) && nestedDeeperThan(line);
      try {
        record = tooDeep ? undefined : JSON.parse(line);
      } catch {
        record = undefined;
      }
      // Valid JSON of the wrong shape counts as corrupt too: applying it bricked the broker (record-shape.ts).
      const problem = tooDeep ? `nested deeper than ${MAX_JSON_DEPTH} levels` : record === undefined ? 'not JSON' : recordProblem(record);
      if (problem !== undefined) {
        skippedLines += 1;
        this.logger.warn(`history: skipped a corrupt line ${lineNumber} of ${this.file} (${line.length} chars; ${problem})`);
        return;
      }
      applyRecord(entries, record as JournalRecord);
      if (bytes > RESULT_INLINE_MAX_BYTES && (record as JournalRecord).e === 'ended') longResults.add((record as { id: string }).id);
      this.loaded.records += 1;
    };
    try {
      const fd = openSync(this.file, O_RDONLY | NO_FOLLOW);
      try {
        forEachLine(fd, apply);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.logger.warn(`history: cannot read ${this.file}: ${(error as Error).message}`);
      }
      return { entries: [], skippedLines, longResults };
    }
    this.loaded.tasks = entries.size;
    for (const entry of entries.values()) {
      const s = entry.snapshot;
      if (!isFinished(s.state)) {
        s.state = 'interrupted';
        s.reason = 'crashed';
        s.message = s.startedAt ? 'the broker stopped while this task was running' : 'the broker stopped before this task started';
        delete s.pid;
        // A compacted recovering task reads as running: recovering again only if its agent still runs.
        delete s.recovering;
      } else {
        delete entry.orphan;
      }
    }
    return { entries: [...entries.values()], skippedLines, longResults };
  }

  /**
   * Opens for appending. Records appended before (tasks submitted while the broker starts) are kept
   * and written now. Failure is reported and leaves the journal disabled, not the broker.
   */
  async open(): Promise<void> {
    try {
      ensureDataDir(path.dirname(this.file));
      const handle = await open(this.file, APPEND, 0o600);
      this.bytes = (await handle.stat()).size;
      // A last line cut short by power loss stays one skipped line: our records start on a fresh one.
      if (this.bytes > 0 && !endsWithNewline(this.file, this.bytes)) {
        await handle.write('\n');
        this.bytes += 1;
      }
      this.handle = handle;
      this.keepReserve();
      this.schedule();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  /** Makes the reserve (RESERVE_FILE) whole, when there is room; without it a full disk stops the journal at once. */
  private keepReserve(): void {
    const file = path.join(path.dirname(this.file), RESERVE_FILE);
    let fd: number | undefined;
    try {
      fd = openSync(file, O_WRONLY | O_CREAT | NO_FOLLOW, 0o600);
      const zeros = Buffer.alloc(RESERVE_BYTES);
      for (let offset = 0; offset < zeros.length;) offset += writeSync(fd, zeros, offset, zeros.length - offset, offset);
      fsyncSync(fd);
      this.reserve = file;
      this.keptRoom = true;
    } catch {
      // No room for it (or a symlink planted there: never written through): none is kept.
      this.reserve = undefined;
      if (fd !== undefined) rmSync(file, { force: true });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Gives the reserve back to the disk; false when there was none. */
  private releaseReserve(): boolean {
    if (!this.reserve) return false;
    rmSync(this.reserve, { force: true });
    this.reserve = undefined;
    // The disk is full now: the next submit looks again rather than trust a check made before.
    this.room.at = 0;
    this.logger.warn(
      `history journal ${this.file}: the disk is full; writing into the room kept for it (${RESERVE_FILE}) — free some space`,
    );
    return true;
  }

  /**
   * Over the size limit, and not already compact: more than COMPACTION_RATIO records per task (a
   * compacted journal has one). A long history kept whole (`historyLimit` of 100,000) is over the
   * limit by itself, and used to be rewritten at every start.
   */
  get needsCompaction(): boolean {
    return this.bytes > this.maxBytes && this.loaded.records > COMPACTION_RATIO * this.loaded.tasks;
  }

  append(record: JournalRecord, sync = false): void {
    if (this.failed) return;
    this.queue.push(JSON.stringify(record) + '\n');
    if (sync) this.syncRequested = true;
    this.schedule();
  }

  /**
   * Resolves once every record appended so far is written and fsynced. Callers waiting together
   * share one fsync (group commit). Resolves at once when nothing is pending or writing failed.
   */
  durable(): Promise<void> {
    if (this.failed || (this.queue.length === 0 && !this.unsynced && !this.flushing)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.syncWaiters.push(resolve);
      this.schedule();
    });
  }

  /**
   * The journal will never be opened (the broker could not start): nothing can be made durable, so
   * `durable()` resolves at once from now on and those already waiting are let go.
   */
  abandon(reason: string): void {
    this.failed ??= `history journal ${this.file} is not kept (${reason})`;
    this.queue = [];
    this.releaseWaiters();
  }

  private schedule(): void {
    if (this.scheduled || (this.queue.length === 0 && this.syncWaiters.length === 0)) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** Writes what is queued; resolves when it is on disk (fsynced if a final result was in it, or a caller waits for it). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.failed) return this.releaseWaiters();
    // Not open yet (or being compacted): the queue and the waiters wait for open().
    if (!this.handle || (this.queue.length === 0 && this.syncWaiters.length === 0)) return;
    const batch = this.queue.join('');
    const waiters = this.syncWaiters;
    const sync = this.syncRequested || waiters.length > 0;
    this.queue = [];
    this.syncWaiters = [];
    this.syncRequested = false;
    const handle = this.handle;
    this.flushing = (async () => {
      const data = Buffer.from(batch);
      const write = async (): Promise<void> => {
        // A full disk first shows as a short write: keep writing until the kernel says why it cannot.
        if (data.length <= SYNC_WRITE_MAX_BYTES) {
          for (let offset = 0; offset < data.length;) offset += writeSync(handle.fd, data, offset, data.length - offset);
          return;
        }
        for (let offset = 0; offset < data.length;) offset += (await handle.write(data, offset, data.length - offset)).bytesWritten;
      };
      try {
        try {
          await write();
        } catch (error) {
          // A full disk with the reserve still kept: give it back, and write the whole batch again.
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          await handle.truncate(this.bytes);
          if (!this.releaseReserve()) throw error;
          await write();
        }
        this.bytes += data.length;
        if (data.length > 0) this.unsynced = true;
        if (sync && this.unsynced) {
          this.unsynced = false;
          await fsyncOf(handle.fd);
        }
      } catch (error) {
        // Drop the half-written batch so the file stays whole lines (the next start reads it cleanly).
        await handle.truncate(this.bytes).catch(() => {});
        this.fail(error as Error);
      }
      for (const resolve of waiters) resolve();
    })();
    await this.flushing;
    this.flushing = undefined;
    // Records and waiters that came during this batch: the next one (their fsync is shared).
    this.schedule();
  }

  private releaseWaiters(): void {
    for (const resolve of this.syncWaiters.splice(0)) resolve();
  }

  /**
   * Rewrites the file as one `ended` record per kept task (write, fsync, rename). Records still
   * queued (tasks submitted meanwhile) are written after it, not lost with the old file.
   */
  async compact(entries: HistoryEntry[]): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.failed) return;
    const old = this.handle;
    this.handle = undefined;
    // Unpredictable, and created new: a name someone guessed and planted a symlink at is never written through.
    const tmp = `${this.file}.${randomBytes(12).toString('hex')}.tmp`;
    try {
      const fd = openSync(tmp, CREATE_NEW, 0o600);
      let written = 0;
      for (const entry of entries) {
        const line =
          JSON.stringify({
            e: 'ended',
            id: entry.snapshot.id,
            at: entry.snapshot.endedAt ?? entry.snapshot.createdAt,
            task: entry.snapshot,
            spec: entry.spec,
          }) + '\n';
        written += writeSync(fd, line);
      }
      fsyncSync(fd);
      closeSync(fd);
      await old?.close();
      renameSync(tmp, this.file);
      this.handle = await open(this.file, APPEND, 0o600);
      this.bytes = written;
      this.unsynced = false;
      this.schedule();
    } catch (error) {
      rmSync(tmp, { force: true });
      this.fail(error as Error);
    }
  }

  async close(): Promise<void> {
    await this.flush();
    await this.handle?.close().catch(() => {});
    this.handle = undefined;
  }

  private fail(error: Error): void {
    if (this.failed) return;
    const code = (error as NodeJS.ErrnoException).code;
    const hint =
      code === 'ENOSPC'
        ? 'the disk is full'
        : code === 'EROFS'
          ? 'the file system is read-only'
          : code === 'EACCES' || code === 'EPERM'
            ? 'permission denied'
            : error.message;
    this.failed = `history journal ${this.file} cannot be written (${hint}); tasks keep running but new results are not saved`;
    this.logger.error(this.failed);
    this.room.at = 0;
    this.queue = [];
    this.releaseWaiters();
  }
}

/** Bytes read at a time: the journal is never in memory whole (100,000 tasks make ~75 MB of it). */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Calls `line` with each line of the file `fd` (UTF-8, without its newline; a last line without
 * one too) and its length in bytes, reading a chunk at a time: a whole journal as one string and its array of lines were
 * most of the hub's memory at start over a long history, long after the start (docs/performance.md § How cost grows with history).
 */
function forEachLine(fd: number, line: (text: string, bytes: number) => void): void {
  let carry: Buffer | undefined;
  const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  for (;;) {
    const read = readSync(fd, chunk, 0, chunk.length, null);
    if (read === 0) break;
    const data: Buffer = carry ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
    let start = 0;
    for (let end = data.indexOf(0x0a, start); end >= 0; end = data.indexOf(0x0a, start)) {
      line(data.toString('utf8', start, end), end - start);
      start = end + 1;
    }
    // The rest is the start of a line that goes on in the next chunk: a copy, the chunk is reused.
    carry = start < data.length ? Buffer.from(data.subarray(start)) : undefined;
  }
  if (carry) line(carry.toString('utf8'), carry.length);
}

/**
 * True when `text` has more than `max` opening brackets (those inside strings counted too): only
 * such a line can nest deeper than `max`. The native `indexOf` finds the few brackets of a record
 * at a fraction of the cost of `nestedDeeperThan`'s walk over every character, which cost ~0.8× the
 * `JSON.parse` of each line at start (docs/performance.md, "Issue 48 §3").
 */
function moreOpenersThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let n = 0;
  for (let i = text.indexOf('{'); i >= 0; i = text.indexOf('{', i + 1)) if (++n > max) return true;
  for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) if (++n > max) return true;
  return false;
}

function endsWithNewline(file: string, size: number): boolean {
  const fd = openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

function applyRecord(entries: Map<string, HistoryEntry>, record: JournalRecord): void {
  switch (record.e) {
    case 'queued':
      entries.set(record.id, {
        spec: record.spec,
        snapshot: {
          id: record.id,
          label: record.spec.label,
          state: 'queued',
          command: record.spec.command,
          args: record.spec.args,
          cwd: record.spec.cwd,
          attempt: 0,
          maxAttempts: record.maxAttempts,
          createdAt: record.at,
          counters: { malformed: 0, rejected: 0, ignored: 0 },
          ...(record.spec.tags ? { tags: record.spec.tags } : {}),
        },
      });
      return;
    case 'attempt': {
      const entry = entries.get(record.id);
      // An ended task stays ended: its agent's pid, reported by the spawner thread, can reach the
      // journal after a fast agent's ending on a loaded machine, and must not make it `running` again.
      if (!entry || isFinished(entry.snapshot.state)) return;
      entry.snapshot.state = 'running';
      entry.snapshot.attempt = record.attempt;
      entry.snapshot.startedAt ??= record.at;
      if (record.pid !== undefined) entry.snapshot.pid = record.pid;
      if (record.pid !== undefined && typeof record.pidStart === 'string') entry.orphan = { pid: record.pid, startTime: record.pidStart };
      else delete entry.orphan;
      return;
    }
    case 'progress': {
      const entry = entries.get(record.id);
      if (!entry) return;
      if (record.progress !== undefined) entry.snapshot.progress = record.progress;
      if (record.partial !== undefined) entry.snapshot.lastPartial = record.partial;
      return;
    }
    case 'exited': {
      const entry = entries.get(record.id);
      if (!entry) return;
      delete entry.snapshot.pid;
      if (record.exitCode !== undefined) entry.snapshot.exitCode = record.exitCode;
      if (record.signal !== undefined) entry.snapshot.signal = record.signal;
      return;
    }
    case 'worktree': {
      const entry = entries.get(record.id);
      if (!entry) return;
      if (record.worktree) entry.snapshot.worktree = record.worktree;
      if (record.change) entry.snapshot.change = record.change;
      return;
    }
    case 'ended': {
      const { command, args, cwd, label } = record.task;
      // What runs again (Retry) is what the panel shows: the snapshot's command line, never a different stored one.
      // The record's own spec (parsed for this entry alone) is set in place: no copy of it per task at start.
      const spec = record.spec ?? ({ ...entries.get(record.id)?.spec } as StoredSpec);
      spec.command = command;
      spec.args = args;
      spec.cwd = cwd;
      spec.label = label;
      entries.set(record.id, { snapshot: record.task, spec });
      return;
    }
    default:
      return;
  }
}

/** Bytes an unprivileged writer may still use on the file system of `dir`. */
function freeBytes(dir: string): number {
  const { bavail, bsize } = statfsSync(dir);
  return bavail * bsize;
}
