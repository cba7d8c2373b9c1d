/**
 * The hub's schedule calls (docs/schedules.md): each a call of the hub's scheduler (../scheduler.ts),
 * its errors through the one table, a schedule shown with its next fire, its runs and its last run's state.
 */
import type { BackchannelBridge, PresetInfo } from '../../bridge/contract.js';
import { BridgeError } from '../../model/errors.js';
import { FIRE_PAGE_SIZE } from '../../model/limits.js';
import type { FireRecord, Schedule } from '../../schedules/schedule.js';
import type { ScheduleRequest, ScheduleView } from '../../schedules/views.js';
import type { BrokerLike } from '../broker-like.js';
import { translate } from './common.js';

/** The part of `HubScheduler` the bridge uses (structural, as `BrokerLike`). */
export interface SchedulerLike {
  list(): Schedule[];
  get(name: string): Schedule | undefined;
  /** A schedule's fire records, oldest first. */
  history(name: string): FireRecord[];
  /** The next fire time after the scheduler's now; undefined while paused or when it never fires again. */
  nextFireAt(name: string): number | undefined;
  activeRuns(name: string): number;
  /** Throws BrokerError `invalid_option` or `refused` with one line (nothing stored then). */
  add(input: Record<string, unknown>): Schedule;
  remove(name: string): boolean;
  setPaused(name: string, paused: boolean): Schedule;
  runNow(name: string): FireRecord;
}

/** The refusal of a schedule call where no scheduler runs. */
export const NO_SCHEDULER = 'schedules need a running hub: start `backchannel serve` or the desktop app';

type ScheduleCall = 'listSchedules' | 'getSchedule' | 'addSchedule' | 'setSchedulePaused' | 'removeSchedule' | 'runScheduleNow';

/** The schedule calls; without a scheduler (a front-end's own broker, the history) each is refused with NO_SCHEDULER. */
export function scheduleCalls(
  broker: BrokerLike,
  scheduler: SchedulerLike | undefined,
  presets: readonly PresetInfo[],
): Pick<BackchannelBridge, ScheduleCall> {
  const on = async <T>(run: (scheduler: SchedulerLike) => T): Promise<T> => {
    if (!scheduler) throw new BridgeError('conflict', NO_SCHEDULER);
    try {
      return run(scheduler);
    } catch (error) {
      return translate(error);
    }
  };
  const view = (s: SchedulerLike, schedule: Schedule, history?: FireRecord[]): ScheduleView => viewOf(broker, s, schedule, history);
  return {
    listSchedules: () => on((s) => s.list().map((schedule) => view(s, schedule))),
    getSchedule: (name, query) =>
      on((s) => {
        const schedule = known(s, name);
        const history = s.history(name);
        // The cursor is a position in the schedule's records, which are only ever appended: stable.
        const before = Math.min(query?.before ?? history.length, history.length);
        const start = Math.max(0, before - (query?.limit ?? FIRE_PAGE_SIZE));
        return {
          ...view(s, schedule, history),
          fires: history.slice(start, before).reverse(),
          total: history.length,
          ...(start > 0 ? { next: start } : {}),
        };
      }),
    addSchedule: (request) => on((s) => view(s, s.add(withPresetCommand(request, presets)))),
    setSchedulePaused: (name, paused) =>
      on((s) => {
        known(s, name);
        return view(s, s.setPaused(name, paused));
      }),
    removeSchedule: (name) =>
      on((s) => {
        if (!s.remove(name)) throw new BridgeError('not_found', `No schedule named "${name.slice(0, 80)}"`);
      }),
    runScheduleNow: (name) =>
      on((s) => {
        known(s, name);
        return s.runNow(name);
      }),
  };
}

function known(s: SchedulerLike, name: string): Schedule {
  const schedule = s.get(name);
  if (!schedule) throw new BridgeError('not_found', `No schedule named "${name.slice(0, 80)}"`);
  return schedule;
}

/** A schedule as the panel shows it: its next fire, its active runs, its last fire and last run (with that task's state). */
function viewOf(broker: BrokerLike, s: SchedulerLike, schedule: Schedule, history = s.history(schedule.name)): ScheduleView {
  const lastFire = history.at(-1);
  const lastRun = history.findLast((fire) => fire.outcome === 'ran');
  const lastRunState = lastRun?.taskId === undefined ? undefined : broker.get(lastRun.taskId)?.state;
  const nextFireAt = s.nextFireAt(schedule.name);
  return {
    schedule,
    ...(nextFireAt === undefined ? {} : { nextFireAt }),
    activeRuns: s.activeRuns(schedule.name),
    ...(lastFire ? { lastFire } : {}),
    ...(lastRun ? { lastRun } : {}),
    ...(lastRunState ? { lastRunState } : {}),
  };
}

/**
 * A schedule request that names a preset, as the preset's command line (what a fire runs and the
 * run policy judges); an unknown preset is `invalid_request`, naming the hub's presets.
 */
function withPresetCommand(request: ScheduleRequest, presets: readonly PresetInfo[]): Record<string, unknown> {
  if (request.preset === undefined || request.command !== undefined) return request;
  const preset = presets.find((candidate) => candidate.name === request.preset);
  if (!preset) {
    const names = presets.map((candidate) => candidate.name).join(', ') || 'none';
    throw new BridgeError('invalid_request', `No preset named "${String(request.preset).slice(0, 80)}" on this hub (presets: ${names})`);
  }
  const { preset: _preset, ...rest } = request;
  // A named ACP agent's preset runs as an ACP task at every fire (docs/acp.md).
  const { acp, input } = preset.request;
  return {
    ...rest,
    command: [preset.request.command, ...(preset.request.args ?? [])],
    ...(acp ? { acp } : {}),
    ...(input !== undefined && rest.input === undefined ? { input } : {}),
  };
}
