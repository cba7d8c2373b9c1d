/**
 * One home for history: the desktop app and every headless command (`serve`, `tasks`, `stats`,
 * `logs`, `run --local`) keep it in the same directory, `$XDG_STATE_HOME/backchannel`
 * (../paths/data-dir.ts `defaultDataDir`). Earlier versions of the app kept theirs in Electron's `userData`
 * (`<userData>/state`), where `tasks` and `stats` never looked. At start the app calls
 * `moveLegacyHistory` once, before its broker locks the home:
 *
 * - no earlier history (or one already moved): nothing happens;
 * - the home has no history yet: the earlier one is moved there (renamed, entry by entry; copied
 *   when the two are on different file systems), and a note in the old directory says where it went;
 * - both have history: nothing is merged (two journals cannot be joined safely); the earlier one
 *   stays where it is, and the notice says how to read it (`stats`/`serve --data-dir`). The note is written then
 *   too, so the notice is given once.
 *
 * The old directory gets the data directory's rules (ours, not writable by others, not a symlink);
 * a symlink inside it is never followed or moved. An earlier app still running there (its lock is
 * live) is left alone.
 */
import { cpSync, lstatSync, readdirSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir } from '../broker/history/data-dir.js';
import { LOCK_FILE, readLockHolder } from '../broker/history/data-dir-lock.js';
import { JOURNAL_FILE } from '../broker/history/journal.js';
import { ROLLUP_FILE } from '../broker/history/rollup.js';
import { defaultDataDir } from '../paths/data-dir.js';

/** Left in the old directory: where the history went, or that it was left there. */
export const MOVED_NOTE = 'HISTORY-MOVED.txt';

/** Where the desktop app keeps history (`dataDir`) and where earlier versions kept it (`legacy`). */
export interface DesktopHistory {
  dataDir: string;
  legacy?: string;
}

/**
 * The app's history: the one home, `$XDG_STATE_HOME/backchannel`. A test's (or a portable setup's)
 * own user data (`BACKCHANNEL_USER_DATA`) keeps its history inside it, as before, and moves nothing.
 */
export function desktopHistory(userData: string, env: NodeJS.ProcessEnv = process.env): DesktopHistory {
  const legacy = join(userData, 'state');
  return env.BACKCHANNEL_USER_DATA ? { dataDir: legacy } : { dataDir: defaultDataDir(env), legacy };
}

export type LegacyHistoryOutcome =
  | { kind: 'none' }
  | { kind: 'moved'; from: string; to: string; notice: string }
  | { kind: 'kept'; from: string; to: string; notice: string };

/** Moves the history in `from` (the app's old `<userData>/state`) into `to` (the one home) if it is the only one. */
export async function moveLegacyHistory(from: string, to: string): Promise<LegacyHistoryOutcome> {
  if (!hasHistory(from) || exists(join(from, MOVED_NOTE))) return { kind: 'none' };
  ensureDataDir(from, 'The earlier history directory');
  if (await readLockHolder(from)) return { kind: 'none' }; // an earlier app still runs on it
  ensureDataDir(to);
  if (hasHistory(to) || exists(join(to, ROLLUP_FILE))) {
    const notice =
      `The desktop app's earlier history stays in ${from}: ${to} already has history, and two histories are not merged. ` +
      `Read its figures with \`backchannel stats --data-dir ${from}\`, or browse it with \`backchannel serve --data-dir ${from}\` while the app is closed.`;
    writeFileSync(join(from, MOVED_NOTE), `${notice}\n`, { mode: 0o600 });
    return { kind: 'kept', from, to, notice };
  }
  moveEntries(from, to);
  const notice = `The desktop app's history moved from ${from} to ${to}, where \`backchannel tasks\` and \`stats\` read it too.`;
  writeFileSync(join(from, MOVED_NOTE), `${notice}\n`, { mode: 0o600 });
  return { kind: 'moved', from, to, notice };
}

function exists(file: string): boolean {
  return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}

/** A journal with something in it (a regular file: a symlink there is not history). */
function hasHistory(dir: string): boolean {
  const journal = lstatSync(join(dir, JOURNAL_FILE), { throwIfNoEntry: false });
  return journal !== undefined && journal.isFile() && journal.size > 0;
}

/** Moves every file and directory of `from` into `to`; a directory both have is merged; symlinks and the lock stay. */
function moveEntries(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.name === LOCK_FILE || entry.isSymbolicLink() || !(entry.isFile() || entry.isDirectory())) continue;
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    const there = lstatSync(target, { throwIfNoEntry: false });
    if (entry.isDirectory() && there?.isDirectory()) {
      moveEntries(source, target);
      rmdirIfEmpty(source);
    } else if (!there) {
      move(source, target);
    }
  }
}

function move(source: string, target: string): void {
  try {
    renameSync(source, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    cpSync(source, target, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true });
    rmSync(source, { recursive: true, force: true });
  }
}

function rmdirIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (a symlink or a name the home already had stays): left as it is
  }
}
