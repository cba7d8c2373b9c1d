/**
 * The hub's scheduler: once a tick it asks every schedule what is due (`planFires`, with this
 * scheduler's start as the line between on-time fires and ones missed while the hub was down),
 * submits the fires that run through the broker with the `schedule` door, and records every fire —
 * ran (its task id) or skipped (its reason) — in the store before going on. A schedule's command is
 * judged by the run policy as the `schedule` door when the schedule is created (`add` refuses what
 * the policy would refuse), and again by admission at every fire (the policy may have changed).
 * The clock and the tick are injected, so tests drive it; `stop()` leaves running tasks to the broker.
 */
import path from 'node:path';
import { BrokerError } from '../broker/errors.js';
import type { Logger } from '../broker/log.js';
import type { RunPolicy } from '../broker/run-policy.js';
import type { TaskHandle } from '../broker/types.js';
import type { TaskSpec } from '../model/task.js';
import {
  cronError,
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

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Starts firing: fire times from now on are on time, earlier ones were missed while the hub was down. */
  start(): void {
    this.upSince = this.now();
    this.tick();
    const every = this.options.tickMs ?? SCHEDULER_TICK_MS;
    if (every > 0) {
      this.timer = setInterval(() => this.tick(), every);
      this.timer.unref();
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Creates (or replaces) a schedule; throws BrokerError `invalid` or `refused` with one line. */
  add(input: Record<string, unknown>): Schedule {
    const parsed = parseSchedule({ createdAt: this.now(), ...input });
    if (!parsed.ok) throw new BrokerError('invalid_option', parsed.message);
    const schedule = parsed.schedule;
    if (schedule.cron !== undefined) {
      const problem = cronError(schedule.cron, schedule.tz);
      if (problem) throw new BrokerError('invalid_option', problem);
    }
    const spec = specOf(schedule);
    const verdict = this.options.runPolicy?.judge({
      command: spec.command,
      args: spec.args ?? [],
      cwd: path.resolve(spec.cwd ?? process.cwd()),
      origin: 'schedule',
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

  /** One round: plan every schedule and act on it. Never throws; a failing schedule is logged. */
  tick(): void {
    for (const schedule of this.options.store.list()) {
      try {
        this.fire(schedule);
      } catch (error) {
        this.options.logger.error(`schedule ${schedule.name}: ${(error as Error).message}`);
      }
    }
  }

  private fire(schedule: Schedule): void {
    const { store } = this.options;
    const now = this.now();
    const plan = planFires({
      schedule,
      lastFireAt: store.lastFireAt(schedule.name),
      now,
      upSince: this.upSince,
      running: this.activeRuns(schedule.name),
      buffered: this.buffered.has(schedule.name),
    });
    if (plan.through === undefined) return;
    const records: FireRecord[] = [];
    try {
      for (const decision of plan.decisions) records.push(this.act(schedule, decision, now));
    } finally {
      // What already ran is recorded even when a later fire failed to start (it is planned again next tick).
      store.record(records);
    }
    for (const record of records) if (record.outcome === 'skipped') this.options.onSkipped?.(record);
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
    const handle = this.options.submit(specOf(schedule));
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

/** The task a fire of the schedule submits, through the `schedule` door. */
function specOf(schedule: Schedule): TaskSpec {
  const [command, ...args] = schedule.command ?? [];
  return {
    command: command ?? schedule.preset!,
    args,
    origin: 'schedule',
    label: `schedule ${schedule.name}`,
    ...(schedule.cwd ? { cwd: schedule.cwd } : {}),
    ...(schedule.maxTokens ? { maxTokens: schedule.maxTokens } : {}),
    ...(schedule.maxCostUsd ? { maxCostUsd: schedule.maxCostUsd } : {}),
  };
}

/** The hub's scheduler over the schedules in `dataDir`, started (serve and the desktop app). */
export function startSchedules(dataDir: string, options: Omit<SchedulerOptions, 'store'>): HubScheduler {
  const scheduler = new HubScheduler({ ...options, store: new ScheduleStore(dataDir) });
  scheduler.start();
  return scheduler;
}
