/**
 * Tasks whose agent outlived the last broker (a SIGKILLed hub). While the agent's process — the
 * pid *and* start time the journal recorded — still runs, its task is shown `running` with
 * `recovering` set: not ended, not retried (docs/reliability.md). Once that process is gone the task ends
 * once, with its real outcome: the result the agent spooled, or `crashed` when it left none — one
 * `ended` update (the snapshot already changed, so a webhook reads the outcome), then `exited`.
 *
 * The agent cannot reconnect to the new broker, so nobody can answer its questions or tool calls
 * or watch its heartbeats: after `graceMs` one still running is stopped (SIGTERM, then SIGKILL), as
 * is a cancelled one at once. Orphans of tasks no longer in history are stopped after `graceMs` too.
 */
import { readFileSync } from 'node:fs';
import { readSpoolFile, removeSpoolFile, spoolPath } from '../../protocol/spool.js';
import { withoutContent, type FinalPayload } from '../../protocol/index.js';
import type { TaskUpdate } from '../../model/task.js';
import type { Logger } from '../log.js';
import { terminateTree } from '../../base/kill-tree.js';
import { processStartTime } from '../process/start-time.js';
import { errorMessageOf } from '../task/decision.js';
import { Task } from '../task/task.js';
import type { HistoryEntry, Journal } from './journal.js';
import { withSummary, type ResultStore } from './results.js';

/** How often a recovering task's agent is looked at: reading /proc/<pid>/stat costs microseconds. */
const WATCH_MS = 200;

/** What settling a task of history needs (a part of recovery.ts's RecoveryContext). */
export interface SettleContext {
  /** The endpoint directory, where agents spool. */
  dir: string;
  history: Map<string, HistoryEntry>;
  journal: Journal | undefined;
  logger: Logger;
  emit(update: TaskUpdate): void;
  results?: { store: ResultStore };
}

interface Orphan {
  pid: number;
  startTime: string;
  /** Why the broker stopped it (grace over, or a cancel): its ending says so. */
  stoppedBecause?: string;
  /** A cancel asked for it: it ends `cancelled` unless it succeeded first. */
  cancelled?: string;
  settling?: boolean;
}

export interface OrphanTiming {
  graceMs: number;
  killGraceMs: number;
}

export class RecoveringTasks {
  private readonly waiting = new Map<string, Orphan>();
  private readonly timers: NodeJS.Timeout[] = [];
  private watch: NodeJS.Timeout | undefined;

  /**
   * Marks the interrupted tasks of `entries` whose agent still runs as recovering (in `history`),
   * watches them, and stops every still-running orphan after `graceMs`.
   */
  constructor(
    private readonly context: SettleContext,
    entries: readonly HistoryEntry[],
    private readonly timing: OrphanTiming,
  ) {
    const others: Orphan[] = [];
    for (const entry of entries) {
      if (!entry.orphan || !alive(entry.orphan)) continue;
      const kept = context.history.get(entry.snapshot.id) === entry && entry.snapshot.state === 'interrupted';
      if (kept) this.recover(entry, entry.orphan);
      else others.push({ ...entry.orphan });
    }
    if (this.waiting.size === 0 && others.length === 0) return;
    if (this.waiting.size > 0) this.watch = this.every(WATCH_MS, () => this.check());
    this.after(timing.graceMs, () => {
      for (const [id, orphan] of this.waiting) this.stop(id, orphan, `its agent outlived the hub's restart by ${timing.graceMs} ms`);
      for (const orphan of others) this.stop(undefined, orphan, 'an agent of the previous broker that is still running');
    });
  }

  /** True while `id` waits for its agent of the previous broker. */
  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** The tasks waiting, with their agents' records (journalled again after a compaction). */
  entries(): Array<[string, { pid: number; startTime: string }]> {
    return [...this.waiting].map(([id, { pid, startTime }]) => [id, { pid, startTime }]);
  }

  /** Cancels a recovering task: its agent is stopped, and it ends `cancelled` (unless it succeeded first). */
  cancel(id: string, reason: string): boolean {
    const orphan = this.waiting.get(id);
    if (!orphan || orphan.cancelled) return false;
    orphan.cancelled = reason;
    this.stop(id, orphan, reason);
    return true;
  }

  close(): void {
    for (const timer of this.timers.splice(0)) clearTimeout(timer);
  }

  private recover(entry: HistoryEntry, orphan: { pid: number; startTime: string }): void {
    const { snapshot } = entry;
    snapshot.state = 'running';
    delete snapshot.reason;
    snapshot.message = `recovering: the hub restarted while this task ran; its agent (pid ${orphan.pid}) still runs`;
    snapshot.pid = orphan.pid;
    snapshot.recovering = true;
    // Set again: its state changed (history counts tasks by state).
    this.context.history.set(snapshot.id, entry);
    this.waiting.set(snapshot.id, { ...orphan });
    this.context.logger.info(`task ${snapshot.id} is recovering: its agent (pid ${orphan.pid}) outlived the last broker`);
  }

  private check(): void {
    for (const [id, orphan] of this.waiting) if (!orphan.settling && !alive(orphan)) this.settle(id, orphan);
  }

  /** The agent is gone: its spooled result, or `crashed`; then `exited`. Once. */
  private settle(id: string, orphan: Orphan): void {
    orphan.settling = true;
    const file = spoolPath(this.context.dir, id);
    const read = readSpoolFile(file, id);
    const payload = read.ok ? read.payload : undefined;
    settleFromHistory(this.context, id, endingOf(payload, orphan));
    removeOnceDurable(this.context, [file]);
    this.waiting.delete(id);
    // Nothing left to watch; the grace timer stays, for the other orphans.
    if (this.waiting.size === 0) clearInterval(this.watch);
  }

  private stop(id: string | undefined, orphan: Orphan, why: string): void {
    if (!alive(orphan)) return;
    orphan.stoppedBecause ??= why;
    const what = id ? `the agent of recovering task ${id}` : 'an agent of the previous broker';
    this.context.logger.warn(`stopping pid ${orphan.pid}, ${what}: ${why}`);
    terminateTree(orphan.pid, { graceMs: this.timing.killGraceMs, exited: () => !alive(orphan) });
  }

  private every(ms: number, run: () => void): NodeJS.Timeout {
    const timer = setInterval(run, ms);
    timer.unref();
    this.timers.push(timer);
    return timer;
  }

  private after(ms: number, run: () => void): void {
    const timer = setTimeout(run, ms);
    timer.unref();
    this.timers.push(timer);
  }
}

/** How a task of history ends: with the result its agent spooled, or a failure the broker says. */
export type RecoveredEnding = { kind: 'spooled'; payload: FinalPayload } | { kind: 'cancelled' | 'crashed'; message: string };

function endingOf(payload: FinalPayload | undefined, orphan: Orphan): RecoveredEnding {
  if (payload?.status === 'success') return { kind: 'spooled', payload };
  if (orphan.cancelled) return { kind: 'cancelled', message: orphan.cancelled };
  // An agent the broker stopped reports `cancelled`: what ended it is the broker's stop, said so.
  if (orphan.stoppedBecause) return { kind: 'crashed', message: `stopped by the hub: ${orphan.stoppedBecause}` };
  if (payload) return { kind: 'spooled', payload };
  return { kind: 'crashed', message: 'its agent ended after the hub restarted and left no result' };
}

/**
 * Ends an interrupted or recovering task of history, once, by the Task's own transitions: the
 * journal gets its `ended` record, the history its new snapshot, and only then go out its updates
 * (`ended`, and `exited` for a recovering one), so whoever reads the task on `ended` (a webhook, a
 * follower) reads its outcome. False when no such task waits.
 */
export function settleFromHistory(context: SettleContext, id: string, ending: RecoveredEnding): boolean {
  const entry = context.history.get(id);
  if (!entry || (entry.snapshot.state !== 'interrupted' && !entry.snapshot.recovering)) return false;
  const recovering = entry.snapshot.recovering === true;
  const updates: TaskUpdate[] = [];
  const task = Task.fromSnapshot(entry.snapshot, (update) => updates.push(update));
  if (ending.kind === 'spooled') endWithSpooled(task, ending.payload);
  else task.fail(ending.kind, ending.message);
  if (recovering) task.attemptExited(undefined, null);
  entry.snapshot = task.snapshot();
  const summary = task.final && context.results?.store.write(task.id, withoutContent(task.final));
  if (summary) entry.snapshot = withSummary(entry.snapshot, summary);
  // Set again: its state changed (history counts tasks by state).
  context.history.set(task.id, entry);
  context.journal?.append({ e: 'ended', id: task.id, at: entry.snapshot.endedAt!, task: entry.snapshot, spec: entry.spec }, true);
  for (const update of updates) context.emit(update);
  return true;
}

function endWithSpooled(task: Task, payload: FinalPayload): void {
  if (payload.status === 'success') return task.succeed(payload, 'spool');
  const reason = payload.status === 'cancelled' ? 'cancelled' : 'error';
  const detail = `${errorMessageOf(payload)} (result recovered from the spool)`;
  task.fail(reason, `failed: ${detail}`, payload, 'spool', detail);
}

/**
 * Removes spool files once the records of what was taken from them are on disk: a hub killed before
 * finds them again (and a task already ended by then removes its file as "not waiting").
 */
export function removeOnceDurable({ journal }: Pick<SettleContext, 'journal'>, files: string[]): void {
  if (files.length === 0) return;
  void (journal ? journal.durable() : Promise.resolve()).then(() => files.forEach(removeSpoolFile));
}

/** The recorded process still runs (same pid, same start time, not a zombie waiting for its reaper). */
export function alive({ pid, startTime }: { pid: number; startTime: string }): boolean {
  if (processStartTime(pid) !== startTime) return false;
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}
