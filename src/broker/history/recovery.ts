/**
 * Spool adoption: a sub-agent whose broker vanished writes its final payload to
 * `<endpointDir>/<task_id>.json` (protocol/spool.ts). The next broker adopts those results into
 * history — the task shows its real result instead of "interrupted" — by the Task's own transitions.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { readSpoolFile, removeSpoolFile, taskIdOfSpoolFile } from '../../protocol/spool.js';
import { withoutContent, type FinalPayload } from '../../protocol/index.js';
import { terminateTree } from '../process/kill-tree.js';
import { processStartTime } from '../process/start-time.js';
import type { Logger } from '../log.js';
import { errorMessageOf } from '../task/decision.js';
import { Task } from '../task/task.js';
import type { TaskUpdate } from '../../model/task.js';
import type { HistoryEntry, Journal } from './journal.js';
import { tooOld, type Retention } from './registry.js';
import type { Rollup } from './rollup.js';
import { ensureDataDir } from './data-dir.js';
import { withSummary, type ResultStore } from './results.js';

export interface RecoveryContext {
  /** The endpoint directory, where agents spool. */
  dir: string;
  history: Map<string, HistoryEntry>;
  journal: Journal | undefined;
  logger: Logger;
  emit(update: TaskUpdate): void;
  /** Where tasks that leave history are aggregated. */
  rollup?: Rollup;
  /** Big results on disk; `keep` names tasks outside `history` whose files must stay (live ones). */
  results?: { store: ResultStore; keep(id: string): boolean };
}

export interface RestoreTiming {
  /** What history keeps (the rest goes into the rollup). */
  retention: Retention;
  /** Spool check interval while an interrupted task waits. */
  checkMs: number;
  /** Time the last broker's surviving agents get before they are stopped (see stopOrphans). */
  orphanGraceMs: number;
  killGraceMs: number;
}

/**
 * Loads the journal into `history` (as much as `retention` keeps; the rest goes into the rollup),
 * opens it for appending, adopts spooled results, and compacts when needed. Agents of the dead broker may still be working: while an
 * interrupted task waits, its spool is checked every `checkMs`; the returned timer does that (unref'd).
 */
export async function restoreHistory(
  context: RecoveryContext & { journal: Journal; warn(message: string): void },
  { retention, checkMs, orphanGraceMs, killGraceMs }: RestoreTiming,
): Promise<NodeJS.Timeout | undefined> {
  const { journal, history, rollup } = context;
  const { entries, skippedLines } = journal.load();
  if (skippedLines > 0) context.warn(`history: skipped ${skippedLines} corrupt journal line(s)`);
  const now = Date.now();
  const fresh = entries.filter((entry) => !tooOld(entry.snapshot, retention.maxAgeMs, now));
  const kept = new Set(fresh.slice(-retention.limit));
  for (const entry of kept) history.set(entry.snapshot.id, entry);
  rollup?.open(path.dirname(journal.file));
  rollup?.fold(entries.filter((entry) => !kept.has(entry)).map((entry) => entry.snapshot));
  if (rollup?.error) context.warn(rollup.error);
  const migrated = keepResultFiles(context, context.warn);
  await journal.open();
  if (journal.error) context.warn(journal.error);
  adoptSpooledResults(context);
  let spoolCheck: NodeJS.Timeout | undefined;
  if ([...history.values()].some((e) => e.snapshot.state === 'interrupted')) {
    spoolCheck = setInterval(() => adoptSpooledResults(context, true), checkMs);
    spoolCheck.unref();
  }
  stopOrphans(context, entries, orphanGraceMs, killGraceMs);
  if (journal.needsCompaction || entries.length > history.size || migrated > 0) {
    await journal.compact([...history.values()]);
    if (!journal.error) rollup?.compacted();
  }
  return spoolCheck;
}

/**
 * Result files of kept tasks stay; the others (tasks that left history, a crash between writing a
 * file and journalling it) are removed. A big result still inline (a journal of an older version)
 * moves to its file. Returns how many moved: the journal is then compacted to drop their copies.
 */
function keepResultFiles({ history, results, logger }: RecoveryContext, warn: (message: string) => void): number {
  if (!results) return 0;
  try {
    // Made private now, not at the first big result: nobody else gets to create it first.
    ensureDataDir(results.store.dir, 'Results directory');
  } catch (error) {
    warn(`${(error as Error).message} (big results stay in memory only)`);
    return 0;
  }
  const removed = results.store.sweep((id) => history.get(id)?.snapshot.resultSummary !== undefined || results.keep(id));
  if (removed > 0) logger.info(`removed ${removed} result file(s) of tasks no longer in history`);
  let migrated = 0;
  for (const entry of history.values()) {
    const { snapshot } = entry;
    if (!snapshot.result || snapshot.resultSummary) continue;
    const summary = results.store.write(snapshot.id, snapshot.result);
    if (!summary) continue;
    entry.snapshot = withSummary(snapshot, summary);
    migrated += 1;
  }
  return migrated;
}

/**
 * Agents of the killed broker lead their own process groups and outlive it. After `graceMs` (their
 * chance to finish and spool), each one whose pid *and* process start time still match the journal is
 * stopped (SIGTERM, then SIGKILL) — never a process that merely got a recorded pid again — and the
 * spool files are adopted once more.
 */
function stopOrphans(context: RecoveryContext, entries: HistoryEntry[], graceMs: number, killGraceMs: number): void {
  const orphans = entries.flatMap((entry) => (entry.orphan ? [entry.orphan] : []));
  if (orphans.length === 0) return;
  const stop = () => {
    for (const { pid, startTime } of orphans) {
      if (processStartTime(pid) !== startTime) continue;
      context.logger.warn(`stopping pid ${pid}, an agent of the previous broker that is still running`);
      terminateTree(pid, { graceMs: killGraceMs, exited: () => processStartTime(pid) !== startTime });
    }
    setTimeout(() => adoptSpooledResults(context, true), killGraceMs + 100).unref();
  };
  setTimeout(stop, graceMs).unref();
}

/**
 * Adopts every spool file in the directory (`onlyInterrupted`: only those of interrupted tasks; while
 * running, live tasks' spool files are their attempts' business). Every file looked at is removed.
 */
export function adoptSpooledResults(context: RecoveryContext, onlyInterrupted = false): void {
  let names: string[];
  try {
    names = readdirSync(context.dir).filter((name) => taskIdOfSpoolFile(name) !== undefined);
  } catch {
    return;
  }
  if (onlyInterrupted) names = names.filter((name) => context.history.get(taskIdOfSpoolFile(name)!)?.snapshot.state === 'interrupted');
  for (const name of names) {
    const file = path.join(context.dir, name);
    const read = readSpoolFile(file);
    if (!read.ok) context.logger.warn(`spool file ${name} is unreadable (${read.reason}); removed`);
    else if (!adopt(context, read.payload)) context.logger.warn(`spool file ${name} is for a task not waiting in history; removed`);
    removeSpoolFile(file);
  }
}

/** Settles an interrupted task from history with a spooled payload. False when no such task waits. */
function adopt(context: RecoveryContext, payload: FinalPayload): boolean {
  const entry = context.history.get(payload.task_id);
  if (!entry || entry.snapshot.state !== 'interrupted') return false;
  const task = Task.fromSnapshot(entry.snapshot, (update) => context.emit(update));
  if (payload.status === 'success') task.succeed(payload, 'spool');
  else {
    const reason = payload.status === 'cancelled' ? 'cancelled' : 'error';
    const detail = `${errorMessageOf(payload)} (result recovered from the spool)`;
    task.fail(reason, `failed: ${detail}`, payload, 'spool', detail);
  }
  entry.snapshot = task.snapshot();
  const summary = task.final && context.results?.store.write(task.id, withoutContent(task.final));
  if (summary) entry.snapshot = withSummary(entry.snapshot, summary);
  // Set again: its state changed (history counts tasks by state).
  context.history.set(task.id, entry);
  context.journal?.append({ e: 'ended', id: task.id, at: entry.snapshot.endedAt!, task: entry.snapshot, spec: entry.spec }, true);
  context.logger.info(`adopted spooled result of task ${task.id}`);
  return true;
}
