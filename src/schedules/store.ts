/**
 * Schedules and their fire records on disk, in `<data dir>/schedules/`: the directory gets the data
 * directory's rules (ours, 0700, not writable by others, not a symlink), since whoever could write a
 * schedule could make the hub run their command as us. Files are never followed through a symlink
 * (O_NOFOLLOW), are 0600, and are read back only when they are regular files we own.
 *
 * - `schedules.json`: every schedule, rewritten whole and atomically (a temporary file created O_EXCL
 *   with a random name, fsynced, then renamed over), so a crash leaves the old or the new file, never half.
 * - `fires.jsonl`: one fire record per line, appended and fsynced before the fire is reported; a torn
 *   last line (a crash mid-append) is ignored on read, and any line that is not a valid record is skipped.
 *   Bounded: a schedule keeps its newest FIRES_KEPT records (an `--every 1s` schedule fires 86,400
 *   times a day, paused or not), and every run of the last day whatever its number (the per-day caps
 *   read them, ./budget.ts). Past that, by a margin so the cost is shared by many appends, the
 *   file is rewritten atomically (like schedules.json) with each schedule's newest records only.
 * - A run of skips is one record: a skip that continues the schedule's last record (a skip for the
 *   same reason) extends it (`until`, `count`) instead of adding one. The extension is written (a
 *   line with the same `at`, which replaces the earlier one on read) with the schedule's next record
 *   or the next batch, at least every SKIP_RUN_WRITE_MS, and by `flush()`; a crash forgets at most
 *   that much of a run of skips (the scheduler then plans those fire times as missed).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir, NO_FOLLOW } from '../broker/history/data-dir.js';
import { BUDGET_DAY_MS } from './budget.js';
import * as z from 'zod/mini';
import { fireRecordSchema, scheduleSchema, type FireRecord, type Schedule } from './schedule.js';

const SCHEDULES_FILE = 'schedules.json';
const FIRES_FILE = 'fires.jsonl';

/** The fire records kept per schedule (the panel shows up to 500, `schedule show --limit` more). */
export const FIRES_KEPT = 2000;

/** A run of skips still going is written at least this often (a paused `--every 1s` schedule: 144 lines a day). */
export const SKIP_RUN_WRITE_MS = 10 * 60_000;

export interface ScheduleStoreOptions {
  /** @default FIRES_KEPT */
  readonly firesKept?: number;
}

export class ScheduleStore {
  readonly dir: string;
  private schedules = new Map<string, Schedule>();
  private fires: FireRecord[] = [];
  private readonly firesKept: number;
  /**
   * Set when schedules.json is not valid JSON with a `schedules` list: the one line naming the file
   * and how to repair it. The store then holds no schedule and refuses to write one (Y29).
   */
  damaged: string | undefined;
  /** Runs of skips extended since their last line was written, by schedule, with when the first extension came. */
  private readonly extended = new Map<string, { record: FireRecord; since: number }>();

  /** Opens (creating) `<dataDir>/schedules`; throws when the directory breaks the data directory's rules. */
  constructor(dataDir: string, options: ScheduleStoreOptions = {}) {
    this.firesKept = options.firesKept ?? FIRES_KEPT;
    this.dir = join(dataDir, 'schedules');
    ensureDataDir(dataDir);
    ensureDataDir(this.dir, 'Schedules directory');
    this.load();
  }

  /** Nothing is written over a damaged schedules.json: the owner may still repair it. */
  private refuseDamaged(): void {
    if (this.damaged !== undefined) throw new Error(this.damaged);
  }

  list(): Schedule[] {
    return [...this.schedules.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): Schedule | undefined {
    return this.schedules.get(name);
  }

  /** Adds or replaces a schedule (already checked), durably; throws while schedules.json is damaged. */
  put(schedule: Schedule): void {
    this.refuseDamaged();
    const next = new Map(this.schedules).set(schedule.name, schedule);
    this.writeSchedules(next);
    this.schedules = next;
  }

  /** Removes a schedule; its fire records stay (the history of what ran). False when there was none. */
  remove(name: string): boolean {
    this.refuseDamaged();
    if (!this.schedules.has(name)) return false;
    const next = new Map(this.schedules);
    next.delete(name);
    this.writeSchedules(next);
    this.schedules = next;
    return true;
  }

  /**
   * Records fires durably (fsynced) before returning. A skip that continues its schedule's last record
   * extends it (one record per run of skips); returns the records that were added, not extended.
   */
  record(records: readonly FireRecord[]): FireRecord[] {
    const added: FireRecord[] = [];
    for (const record of records) {
      const parsed = z.parse(fireRecordSchema, record);
      if (this.extend(parsed)) continue;
      this.fires.push(parsed);
      added.push(parsed);
    }
    const now = records.reduce((max, r) => Math.max(max, r.recordedAt), 0);
    const due = added.length > 0 || [...this.extended.values()].some((e) => now - e.since >= SKIP_RUN_WRITE_MS);
    if (due) this.append([...this.takeExtended(added), ...added]);
    return added;
  }

  /** Writes every run of skips extended since its last line (the scheduler calls it when it stops). */
  flush(): void {
    this.append(this.takeExtended([]));
  }

  /** Extends the schedule's last record with `record` when both are skips for the same reason. */
  private extend(record: FireRecord): boolean {
    if (record.outcome !== 'skipped' || record.manual) return false;
    let i = this.fires.length - 1;
    while (i >= 0 && this.fires[i]!.schedule !== record.schedule) i--;
    const last = this.fires[i];
    if (!last || last.outcome !== 'skipped' || last.reason !== record.reason || last.manual) return false;
    const known = (r: FireRecord) => r.count ?? (r.until === undefined ? 1 : undefined);
    const a = known(last);
    const b = known(record);
    const { count: _count, ...rest } = last;
    const merged: FireRecord = {
      ...rest,
      until: record.until ?? record.at,
      ...(a !== undefined && b !== undefined ? { count: a + b } : {}),
    };
    this.fires[i] = merged;
    const since = this.extended.get(record.schedule)?.since ?? record.recordedAt;
    this.extended.set(record.schedule, { record: merged, since });
    return true;
  }

  /** The extended runs to write now (those not superseded in place by `added`), forgotten as pending. */
  private takeExtended(added: readonly FireRecord[]): FireRecord[] {
    const out = [...this.extended.values()].map((e) => e.record).filter((r) => !added.includes(r));
    this.extended.clear();
    return out;
  }

  private append(records: readonly FireRecord[]): void {
    if (records.length === 0) return;
    const text = records.map((r) => JSON.stringify(r) + '\n').join('');
    const fd = openSync(join(this.dir, FIRES_FILE), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NO_FOLLOW, 0o600);
    try {
      checkOwnedFile(fd, FIRES_FILE);
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.trimFires();
  }

  /**
   * Keeps each schedule's newest `firesKept` records, in memory and on disk, and every run of the last
   * day (a per-day cap must not forget one, Y27). Runs when the records it would drop reach half as
   * many as are kept, so a rewrite pays for many appends.
   */
  private trimFires(): void {
    const counts = new Map<string, number>();
    for (const r of this.fires) counts.set(r.schedule, (counts.get(r.schedule) ?? 0) + 1);
    const dayStart = this.fires.reduce((max, r) => Math.max(max, r.recordedAt), 0) - BUDGET_DAY_MS;
    const keptAnyway = (r: FireRecord) => r.outcome === 'ran' && r.recordedAt > dayStart;
    // The oldest records beyond what is kept, per schedule; those that go are the ones not kept anyway.
    const beyond = (): Map<string, number> => new Map([...counts].map(([name, n]) => [name, Math.max(0, n - this.firesKept)]));
    const goes = (left: Map<string, number>) => (r: FireRecord) => {
      const n = left.get(r.schedule)!;
      if (n === 0) return false;
      left.set(r.schedule, n - 1);
      return !keptAnyway(r);
    };
    const counting = goes(beyond());
    let dropped = 0;
    for (const r of this.fires) if (counting(r)) dropped += 1;
    if (dropped < Math.ceil(this.firesKept / 2)) return;
    const dropping = goes(beyond());
    const kept = this.fires.filter((r) => !dropping(r));
    writeAtomically(this.dir, FIRES_FILE, kept.map((r) => JSON.stringify(r) + '\n').join(''));
    this.fires = kept;
  }

  /** A schedule's fire records, oldest first (the last `limit`). */
  history(name: string, limit = Infinity): FireRecord[] {
    const all = this.fires.filter((r) => r.schedule === name);
    return Number.isFinite(limit) ? all.slice(-limit) : all;
  }

  /** A schedule's records written since `since` (by `recordedAt`), newest first; the walk stops at the first older one. */
  recordedSince(name: string, since: number): FireRecord[] {
    const out: FireRecord[] = [];
    for (let i = this.fires.length - 1; i >= 0; i--) {
      const record = this.fires[i]!;
      if (record.recordedAt < since) break;
      if (record.schedule === name) out.push(record);
    }
    return out;
  }

  /** The last fire time recorded for a schedule (ran or skipped; `run-now` fires do not count). */
  lastFireAt(name: string): number | undefined {
    let last: number | undefined;
    for (const r of this.fires) if (r.schedule === name && !r.manual) last = Math.max(last ?? 0, r.until ?? r.at);
    return last;
  }

  private load(): void {
    const file = join(this.dir, SCHEDULES_FILE);
    const schedulesText = readOwned(file);
    if (schedulesText !== undefined) {
      let parsed: { schedules?: unknown };
      try {
        parsed = JSON.parse(schedulesText) as { schedules?: unknown };
        if (parsed === null || typeof parsed !== 'object' || !Array.isArray(parsed.schedules)) throw new Error('no "schedules" list');
      } catch (error) {
        this.damaged =
          `${file} is damaged (${(error as Error).message}), so this hub runs no schedules: repair it ` +
          `(JSON: {"version": 1, "schedules": [ … ]}) or move it away to start with none, then restart the hub`;
        parsed = { schedules: [] };
      }
      for (const item of parsed.schedules as unknown[]) {
        const schedule = z.safeParse(scheduleSchema, item);
        if (schedule.success) this.schedules.set(schedule.data.name, schedule.data);
      }
    }
    const firesText = readOwned(join(this.dir, FIRES_FILE)) ?? '';
    const skipRuns = new Map<string, number>();
    for (const line of firesText.split('\n')) {
      if (line.trim() === '') continue;
      try {
        const record = z.safeParse(fireRecordSchema, JSON.parse(line));
        if (!record.success) continue;
        // A later line for the same run of skips (same schedule and `at`) is its extension: it replaces it.
        const key = record.data.outcome === 'skipped' ? `${record.data.schedule}\n${record.data.at}` : undefined;
        const earlier = key === undefined ? undefined : skipRuns.get(key);
        if (earlier !== undefined) this.fires[earlier] = record.data;
        else {
          if (key !== undefined) skipRuns.set(key, this.fires.length);
          this.fires.push(record.data);
        }
      } catch {
        // a torn last line or a damaged one: skipped, the rest is kept
      }
    }
  }

  private writeSchedules(schedules: Map<string, Schedule>): void {
    writeAtomically(this.dir, SCHEDULES_FILE, JSON.stringify({ version: 1, schedules: [...schedules.values()] }, null, 2) + '\n');
  }
}

/** Replaces `dir/name` whole: a temporary file made O_EXCL with a random name, fsynced, renamed over. */
function writeAtomically(dir: string, name: string, text: string): void {
  const target = join(dir, name);
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, target);
  } catch (error) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    rmSync(temp, { force: true });
    throw error;
  }
}

/** A file's text when it exists; undefined when it does not; throws when it is a symlink, not a file, or not ours. */
function readOwned(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(
      `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); schedules are only read from a regular file of our own`,
      { cause: error },
    );
  }
  try {
    checkOwnedFile(fd, file);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

function checkOwnedFile(fd: number, file: string): void {
  if (process.platform === 'win32') return;
  const stat = fstatSync(fd);
  if (!stat.isFile()) throw new Error(`${file} is not a regular file; schedules are only kept in regular files`);
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid())
    throw new Error(`${file} belongs to uid ${stat.uid}, not to us; remove it or choose another data directory`);
}
