/**
 * The hub's scheduler: once a tick it asks every schedule what is due (`planFires`, with this
 * scheduler's start as the line between on-time fires and ones missed while the hub was down),
 * submits the fires that run through the broker with the `schedule` door (or, for a schedule the
 * owner added from their own terminal, as the owner's: `cli`), and records every fire —
 * ran (its task id), skipped (its reason) or, on a fleet, decided by another hub (`elsewhere`) — in
 * the store before going on. A schedule's command is judged by the run policy as the `schedule` door
 * when the schedule is created (`add` refuses what the policy would refuse), and again by admission
 * at every fire (the policy may have changed). A schedule with a per-day cap skips its fires
 * `budget_spent` once its runs of the last 24 h reported that much usage (../schedules/budget.ts).
 *
 * On a fleet (`claims`), every schedule is claimed each tick and every planned fire before it is
 * acted on (../fleet/fire-claims.ts): hubs sharing a schedule by name decide each fire once, by its
 * owner; a fire another hub decided is recorded `elsewhere` and never run here, and one the owner
 * may still decide is planned again next tick.
 * The clock and the tick are injected, so tests drive it; `stop()` leaves running tasks to the broker.
 */
import path from 'node:path';
import { BrokerError } from '../broker/errors.js';
import { planNewWorktree } from '../broker/worktree/worktrees.js';
import { ownerBudgets } from './task-guards.js';
import type { FireClaims, FireVerdict } from '../fleet/fire-claims.js';
import type { DoorBudgets } from '../broker/guards/budget.js';
import type { Logger } from '../base/log.js';
import type { RunPolicy } from '../broker/run-policy.js';
import type { TaskHandle } from '../broker/types.js';
import type { TaskSpec } from '../model/task.js';
import { BUDGET_KEYS, type TaskBudget, type TaskUsage } from '../model/usage.js';
import {
  BUDGET_DAY_MS,
  cronError,
  dayCapReached,
  daySpend,
  hasDayCap,
  nextFireTime,
  parseSchedule,
  planFires,
  type FireDecision,
  type FireRecord,
  type Schedule,
  ScheduleStore,
} from '../schedules/index.js';

/** A tick a second: the finest `--every` is 1 s, and planning is bounded work per tick. */
export const SCHEDULER_TICK_MS = 1000;

export interface SchedulerOptions {
  readonly store: ScheduleStore;
  readonly submit: (spec: TaskSpec) => TaskHandle;
  /** What the `schedule` door may run; none: nothing may be scheduled (the broker's own default). */
  readonly runPolicy?: RunPolicy;
  readonly logger: Logger;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default SCHEDULER_TICK_MS; 0: no timer (tests call tick()) */
  readonly tickMs?: number;
  /** Told of every skipped fire once it is recorded (the `schedule_skipped` webhook). */
  readonly onSkipped?: (record: FireRecord) => void;
  /** What a task reported spending so far (the broker's snapshot `usage`): the per-day caps read it. */
  readonly usageOf?: (taskId: string) => TaskUsage | undefined;
  /** On a fleet: claims fires across the hubs sharing its Redis; none: this hub decides alone. */
  readonly claims?: FireClaims;
  /** The budgets by door (the config's `budget:`): a schedule's runs carry the budget of the door it was made through. */
  readonly budgets?: DoorBudgets;
}

/**
 * A fleet's claim of a schedule outlives its catch-up window by this much: a hub back from downtime
 * within the window finds the fires another hub decided; one back later runs no miss anyway.
 */
const CLAIM_KEEP_MARGIN_MS = 30 * 86_400_000;

/** What one tick planned for a schedule: the decisions, and the clock they were made at. */
interface Planned {
  readonly decisions: readonly FireDecision[];
  readonly now: number;
}

interface Pending {
  readonly at: number;
  readonly catchUp: boolean;
}

export class HubScheduler {
  private readonly now: () => number;
  private upSince = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly running = new Map<string, Set<TaskHandle>>();
  private readonly buffered = new Map<string, Pending>();
  /** Schedules whose per-day cap was reached (and logged) and not yet left. */
  private readonly capped = new Set<string>();
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Starts firing: fire times from now on are on time, earlier ones were missed while the hub was down. */
  start(): void {
    this.upSince = this.now();
    this.stopped = false;
    void this.tick();
    const every = this.options.tickMs ?? SCHEDULER_TICK_MS;
    if (every > 0) {
      this.timer = setInterval(() => void this.tick(), every);
      this.timer.unref();
    }
  }

  /** Stops firing; a round waiting on its claims acts on nothing more. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.guardedFlush();
  }

  /** Writes the runs of skips still going (a stopping hub keeps what it skipped). */
  private guardedFlush(): void {
    try {
      this.options.store.flush();
    } catch (error) {
      this.options.logger.error(`schedules: the last skipped fires could not be recorded: ${(error as Error).message}`);
    }
  }

  /** Creates (or replaces) a schedule; throws BrokerError `invalid` or `refused` with one line. */
  add(input: Record<string, unknown>): Schedule {
    if (this.options.store.damaged !== undefined) throw new BrokerError('data_dir', this.options.store.damaged);
    const parsed = parseSchedule({ createdAt: this.now(), ...input });
    if (!parsed.ok) throw new BrokerError('invalid_option', parsed.message);
    const schedule = parsed.schedule;
    if (schedule.cron !== undefined) {
      const problem = cronError(schedule.cron, schedule.tz);
      if (problem) throw new BrokerError('invalid_option', problem);
    }
    if (schedule.worktree !== undefined) checkWorktree(schedule, this.options.claims !== undefined);
    const spec = specOf(schedule);
    const verdict = this.options.runPolicy?.judge({
      command: spec.command,
      args: spec.args ?? [],
      cwd: path.resolve(spec.cwd ?? process.cwd()),
      origin: spec.origin,
    }) ?? { allowed: false as const, message: `refused \`${spec.command}\` from a schedule: the hub has no run policy` };
    if (!verdict.allowed) throw new BrokerError('refused', verdict.message);
    this.options.store.put(schedule);
    return schedule;
  }

  remove(name: string): boolean {
    this.buffered.delete(name);
    return this.options.store.remove(name);
  }

  setPaused(name: string, paused: boolean): Schedule {
    const schedule = this.options.store.get(name);
    if (!schedule) throw new BrokerError('unknown_task', `No schedule named ${name}`);
    const next = { ...schedule, paused };
    this.options.store.put(next);
    return next;
  }

  /** Runs a schedule's command now, outside its times (recorded `manual`; overlap does not apply). */
  runNow(name: string): FireRecord {
    const schedule = this.options.store.get(name);
    if (!schedule) throw new BrokerError('unknown_task', `No schedule named ${name}`);
    const now = this.now();
    const handle = this.launch(schedule);
    const record: FireRecord = { schedule: name, at: now, outcome: 'ran', taskId: handle.id, manual: true, recordedAt: now };
    this.options.store.record([record]);
    return record;
  }

  /** Every schedule, by name (what the bridge's schedule calls read). */
  list(): Schedule[] {
    return this.options.store.list();
  }

  get(name: string): Schedule | undefined {
    return this.options.store.get(name);
  }

  /** A schedule's fire records, oldest first. */
  history(name: string): FireRecord[] {
    return this.options.store.history(name);
  }

  /** The schedule's next fire time after now; undefined for an unknown or paused schedule, or one that never fires again. */
  nextFireAt(name: string): number | undefined {
    const schedule = this.options.store.get(name);
    return schedule && !schedule.paused ? nextFireTime(schedule, this.now()) : undefined;
  }

  /** Runs of a schedule still active. */
  activeRuns(name: string): number {
    return this.running.get(name)?.size ?? 0;
  }

  /**
   * One round: plan every schedule and act on it. Never rejects; a failing schedule is logged. Without
   * claims the round is done when this returns; with them it is done when the promise settles, and a
   * round asked for while one is going is that one.
   */
  tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    const claims = this.options.claims;
    if (!claims) {
      for (const schedule of this.options.store.list()) this.guarded(schedule, () => this.fire(schedule, this.plan(schedule)));
      return Promise.resolve();
    }
    this.ticking = this.claimedRound(claims).finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  /**
   * A round on a fleet: every schedule is claimed, due fires or not (the owner's heartbeat), and the
   * fires this hub won are acted on.
   */
  private async claimedRound(claims: FireClaims): Promise<void> {
    for (const schedule of this.options.store.list()) {
      const planned = this.guarded(schedule, () => this.plan(schedule));
      if (!planned) continue;
      const spans = planned.decisions.map((d) => ({ at: d.at, through: (d.action === 'skip' ? d.until : undefined) ?? d.at }));
      let claimed: Awaited<ReturnType<FireClaims['claim']>>;
      try {
        claimed = await claims.claim(schedule.name, spans, schedule.catchUpWindowMs + CLAIM_KEEP_MARGIN_MS);
      } catch (error) {
        this.options.logger.error(`schedule ${schedule.name}: its fires could not be claimed: ${(error as Error).message}`);
        continue;
      }
      if (this.stopped) return;
      if (spans.length === 0) continue;
      // Removed while the claim was out: nothing runs (the claim only makes other hubs record `elsewhere`).
      const current = this.options.store.get(schedule.name);
      if (current) this.guarded(current, () => this.fire(current, planned, claimed.verdicts, claimed.owner));
    }
  }

  private guarded<T>(schedule: Schedule, step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      this.options.logger.error(`schedule ${schedule.name}: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** What is due for the schedule now; its spend is looked up only when a fire would run. */
  private plan(schedule: Schedule): Planned {
    const { store } = this.options;
    const now = this.now();
    const input = {
      schedule,
      lastFireAt: store.lastFireAt(schedule.name),
      now,
      upSince: this.upSince,
      running: this.activeRuns(schedule.name),
      buffered: this.buffered.has(schedule.name),
    };
    const plan = planFires(input);
    const wouldStart = plan.decisions.some((d) => d.action !== 'skip');
    const reached = wouldStart && hasDayCap(schedule) ? this.dayCapReached(schedule, now) : undefined;
    if (reached === undefined) {
      if (wouldStart) this.capped.delete(schedule.name);
      return { decisions: plan.decisions, now };
    }
    // Said once when the cap is reached, not at every skipped fire (a 1 s schedule: 86,400 lines a day).
    if (!this.capped.has(schedule.name))
      this.options.logger.info(`schedule ${schedule.name}: ${reached}; its fires are skipped budget_spent`);
    this.capped.add(schedule.name);
    return { decisions: planFires({ ...input, budgetSpent: true }).decisions, now };
  }

  /** The per-day cap the schedule's runs of the last 24 h reached, in words; undefined while under it. */
  private dayCapReached(schedule: Schedule, now: number): string | undefined {
    const usageOf = this.options.usageOf ?? (() => undefined);
    const runs = this.options.store.recordedSince(schedule.name, now - BUDGET_DAY_MS);
    return dayCapReached(schedule, daySpend(runs, usageOf, now));
  }

  /**
   * Acts on the planned decisions in order and records them. `verdicts` (on a fleet) says which this
   * hub won: a lost one is recorded `elsewhere`, and at a `wait` (or past the verdicts) it stops.
   */
  private fire(schedule: Schedule, planned: Planned, verdicts?: readonly FireVerdict[], owner?: string): void {
    const records: FireRecord[] = [];
    let added: FireRecord[];
    try {
      for (const [i, decision] of planned.decisions.entries()) {
        const verdict = verdicts ? (verdicts[i] ?? 'wait') : 'won';
        if (verdict === 'wait') break;
        if (verdict === 'lost') records.push(elsewhere(schedule, decision, planned.now, owner));
        else records.push(this.act(schedule, decision, planned.now));
      }
    } finally {
      // What already ran is recorded even when a later fire failed to start (it is planned again next tick).
      added = this.options.store.record(records);
    }
    // One webhook per run of skips: a skip that extended the last record is not news.
    for (const record of added) if (record.outcome === 'skipped') this.options.onSkipped?.(record);
  }

  private act(schedule: Schedule, decision: FireDecision, now: number): FireRecord {
    const base = { schedule: schedule.name, at: decision.at, recordedAt: now };
    if (decision.action === 'skip') {
      const { until, count } = decision;
      return { ...base, outcome: 'skipped', reason: decision.reason, ...(until ? { until } : {}), ...(count ? { count } : {}) };
    }
    if (decision.action === 'buffer') {
      this.buffered.set(schedule.name, { at: decision.at, catchUp: decision.catchUp });
      return { ...base, outcome: 'buffered' };
    }
    if (decision.cancelRunning)
      for (const handle of this.running.get(schedule.name) ?? [])
        handle.cancel(`schedule ${schedule.name} fired again (overlap cancel-other)`);
    let handle: TaskHandle;
    try {
      handle = this.launch(schedule);
    } catch (error) {
      // The policy changed since the schedule was made: the fire is recorded as refused, never retried.
      if (!(error instanceof BrokerError && error.code === 'refused')) throw error;
      this.options.logger.warn(`schedule ${schedule.name}: ${error.message}`);
      return { ...base, outcome: 'skipped', reason: 'refused' };
    }
    return { ...base, outcome: 'ran', taskId: handle.id, ...(decision.catchUp ? { catchUp: true } : {}) };
  }

  private launch(schedule: Schedule): TaskHandle {
    const handle = this.options.submit(specOf(schedule, this.options.budgets));
    const set = this.running.get(schedule.name) ?? new Set<TaskHandle>();
    this.running.set(schedule.name, set.add(handle));
    void handle.finished.then(() => {
      set.delete(handle);
      const pending = this.buffered.get(schedule.name);
      if (pending && set.size === 0 && this.options.store.get(schedule.name)) {
        this.buffered.delete(schedule.name);
        const next = this.launch(schedule);
        this.options.store.record([
          {
            schedule: schedule.name,
            at: pending.at,
            outcome: 'ran',
            taskId: next.id,
            ...(pending.catchUp ? { catchUp: true } : {}),
            recordedAt: this.now(),
          },
        ]);
      }
    });
    return handle;
  }
}

/**
 * The task a fire of the schedule submits: through the `schedule` door, or as the owner's own (`cli`)
 * when the owner made it from their terminal (docs/run-policy.md). A schedule made through another
 * door carries that door's budget where it sets none (Y18); the broker adds the `schedule` door's
 * (or the default) budget for what is still unset.
 */
function specOf(schedule: Schedule, budgets?: DoorBudgets): TaskSpec {
  const [command, ...args] = schedule.command ?? [];
  const door = schedule.origin === 'cli' || schedule.origin === undefined ? undefined : budgets?.[schedule.origin];
  const spec: TaskSpec = {
    command: command ?? schedule.preset!,
    args,
    origin: schedule.origin === 'cli' ? 'cli' : 'schedule',
    label: `schedule ${schedule.name}`,
    // A worktree fire is a coding task of the repository (its cwd in it, when given): `run --worktree`.
    ...(schedule.worktree ? { cwd: schedule.cwd ?? schedule.worktree, worktree: true } : schedule.cwd ? { cwd: schedule.cwd } : {}),
    ...(schedule.acp ? { acp: schedule.acp } : {}),
    ...(schedule.input !== undefined ? { input: schedule.input } : {}),
  };
  // Each budget key from the schedule's own per-run budget, else its door's (a schedule has `run`'s two: no maxTurns).
  const own: TaskBudget = { maxTokens: schedule.maxTokens, maxCostUsd: schedule.maxCostUsd };
  for (const key of BUDGET_KEYS) {
    const limit = own[key] ?? door?.[key];
    if (limit !== undefined) spec[key] = limit;
  }
  return spec;
}

/** The record of a fire another hub on the fleet claimed: it decided (and records) what the fire did. */
function elsewhere(schedule: Schedule, decision: FireDecision, now: number, owner: string | undefined): FireRecord {
  const until = decision.action === 'skip' ? decision.until : undefined;
  return {
    schedule: schedule.name,
    at: decision.at,
    ...(until !== undefined ? { until } : {}),
    outcome: 'elsewhere',
    ...(owner ? { hub: owner } : {}),
    recordedAt: now,
  };
}

/**
 * A worktree schedule names a git repository by an absolute path (the hub's cwd is not the caller's),
 * with a commit to start from, and its cwd, when given, inside it; and it runs on a hub that runs its
 * tasks itself (a fleet worker runs in its own directory, not in the hub's worktree). Throws
 * BrokerError `invalid_option`.
 */
function checkWorktree(schedule: Schedule, onFleet: boolean): void {
  const repo = schedule.worktree!;
  if (onFleet)
    throw new BrokerError(
      'invalid_option',
      'invalid schedule: worktree: this hub runs tasks on a fleet, where a worker does not run in the hub’s worktree',
    );
  if (!path.isAbsolute(repo)) throw new BrokerError('invalid_option', `invalid schedule: worktree: ${repo} is not an absolute path`);
  const cwd = schedule.cwd ?? repo;
  const inside = path.relative(repo, cwd);
  if (!path.isAbsolute(cwd) || inside.startsWith('..') || path.isAbsolute(inside))
    throw new BrokerError('invalid_option', `invalid schedule: cwd: ${cwd} is not inside the worktree's repository ${repo}`);
  planNewWorktree(cwd, {});
}

/** The hub's scheduler over the schedules in `dataDir`, started (serve and the desktop app). */
export function startSchedules(dataDir: string, options: Omit<SchedulerOptions, 'store'>): HubScheduler {
  const store = new ScheduleStore(dataDir);
  const budgets = options.budgets ?? ownerBudgets();
  // A damaged schedules.json keeps the hub up, without schedules, and says how to repair it (Y29).
  if (store.damaged !== undefined) options.logger.error(`schedules: ${store.damaged}`);
  const scheduler = new HubScheduler({ ...options, store, ...(budgets ? { budgets } : {}) });
  scheduler.start();
  return scheduler;
}
