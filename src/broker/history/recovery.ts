/**
 * Spool adoption: a sub-agent whose broker vanished writes its final payload to
 * `<endpointDir>/<task_id>.json` (protocol/spool.ts). The next broker adopts those results into
 * history — the task shows its real result instead of "interrupted" — by the Task's own transitions.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { readSpoolFile, taskIdOfSpoolFile } from '../../protocol/spool.js';
import type { FinalPayload } from '../../protocol/index.js';
import type { Logger } from '../log.js';
import type { TaskUpdate } from '../../model/task.js';
import type { HistoryEntry, Journal } from './journal.js';
import { tooOld, type Retention } from './registry.js';
import type { Rollup } from './rollup.js';
import { ensureDataDir } from './data-dir.js';
import { withSummary, type ResultStore } from './results.js';
import { alive, RecoveringTasks, removeOnceDurable, settleFromHistory } from './recovering.js';

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

/** What restoring history leaves running: the interrupted tasks' spool check and the recovering tasks. */
export interface Restored {
  spoolCheck?: NodeJS.Timeout;
  recovering: RecoveringTasks;
}

/**
 * Loads the journal into `history` (as much as `retention` keeps; the rest goes into the rollup),
 * opens it for appending, adopts spooled results, and compacts when needed. Agents of the dead broker may still be working:
 * a task whose agent still runs is recovering (./recovering.ts) until that agent is gone; while an
 * interrupted task waits, its spool is checked every `checkMs` (the returned timer, unref'd).
 */
export async function restoreHistory(
  context: RecoveryContext & { journal: Journal; warn(message: string): void },
  { retention, checkMs, orphanGraceMs, killGraceMs }: RestoreTiming,
): Promise<Restored> {
  const { journal, history, rollup } = context;
  const { entries, skippedLines, longResults } = journal.load();
  if (skippedLines > 0) context.warn(`history: skipped ${skippedLines} corrupt journal line(s)`);
  const now = Date.now();
  const fresh = entries.filter((entry) => !tooOld(entry.snapshot, retention.maxAgeMs, now));
  const kept = new Set(fresh.slice(-retention.limit));
  for (const entry of kept) history.set(entry.snapshot.id, entry);
  rollup?.open(path.dirname(journal.file));
  rollup?.fold(entries.filter((entry) => !kept.has(entry)).map((entry) => entry.snapshot));
  if (rollup?.error) context.warn(rollup.error);
  const migrated = keepResultFiles(context, context.warn, longResults);
  await journal.open();
  if (journal.error) context.warn(journal.error);
  adoptSpooledResults(context);
  const recovering = new RecoveringTasks(context, entries, { graceMs: orphanGraceMs, killGraceMs });
  let spoolCheck: NodeJS.Timeout | undefined;
  if ([...history.values()].some((e) => e.snapshot.state === 'interrupted')) {
    spoolCheck = setInterval(() => adoptSpooledResults(context, true), checkMs);
    spoolCheck.unref();
  }
  if (journal.needsCompaction || entries.length > history.size || migrated > 0) {
    await journal.compact([...history.values()]);
    if (!journal.error) rollup?.compacted();
    // A compacted journal has no `attempt` record: a recovering task's agent is recorded again.
    for (const [id, { pid, startTime }] of recovering.entries()) {
      const { startedAt, attempt } = history.get(id)!.snapshot;
      journal.append({ e: 'attempt', id, at: startedAt ?? new Date().toISOString(), attempt, pid, pidStart: startTime });
    }
  }
  return { spoolCheck, recovering };
}

/**
 * Result files of kept tasks stay; the others (tasks that left history, a crash between writing a
 * file and journalling it) are removed. A big result still inline (a journal of an older version)
 * moves to its file: only those of `longResults` (tasks whose journal line was long enough to hold
 * one) are looked at, not every result serialized again at each start. Returns how many moved: the
 * journal is then compacted to drop their copies.
 */
function keepResultFiles({ history, results, logger }: RecoveryContext, warn: (message: string) => void, longResults: Set<string>): number {
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
  for (const id of longResults) {
    const entry = history.get(id);
    if (!entry) continue;
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
  const done: string[] = [];
  for (const name of names) {
    const file = path.join(context.dir, name);
    const read = readSpoolFile(file);
    if (!read.ok && stillWriting(context, name)) continue;
    if (!read.ok) context.logger.warn(`spool file ${name} is unreadable (${read.reason}); removed`);
    else if (!adopt(context, read.payload)) context.logger.warn(`spool file ${name} is for a task not waiting in history; removed`);
    done.push(file);
  }
  removeOnceDurable(context, done);
}

/**
 * An unreadable spool file whose agent (of the previous broker) still runs may be one it is still
 * writing in place (an SDK that does not write it whole): it is left for recovering.ts to read once
 * that agent is gone. Removed here, the agent's whole result went with it (a 10 MB one read half-written).
 */
function stillWriting({ history }: RecoveryContext, name: string): boolean {
  const entry = history.get(taskIdOfSpoolFile(name)!);
  return entry?.snapshot.state === 'interrupted' && entry.orphan !== undefined && alive(entry.orphan);
}

/** Settles an interrupted task from history with a spooled payload. False when no such task waits. */
function adopt(context: RecoveryContext, payload: FinalPayload): boolean {
  if (!settleFromHistory(context, payload.task_id, { kind: 'spooled', payload })) return false;
  context.logger.info(`adopted spooled result of task ${payload.task_id}`);
  return true;
}
