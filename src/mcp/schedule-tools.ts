/**
 * The MCP schedule tools (docs/schedules.md), a table beside ./tools.ts' (rows of ./tool-table.ts): `list_schedules`
 * and `create_schedule`, each a few lines over the client's schedule calls (`listSchedules`, `addSchedule`). The hub
 * checks a new schedule's fields (one line per problem, `invalid_request`) and the run policy judges its command at
 * the `schedule` door (a refusal is `refused`, nothing stored): both reach the model as a tool error with that line.
 * Times go out as ISO 8601 (the hub keeps epoch ms), durations come in as people write them (`30s`, `5m`, `1h`).
 * `create_schedule`'s arguments that are schedule fields are derived from the schedule's one declaration
 * (./derived-args.ts); only `name` (required), the durations and `command` + `args` (one argv) are MCP's own.
 */
import * as z from 'zod';
import * as zm from 'zod/mini';
import type { BackchannelClient } from '../client/index.js';
import { parseDuration } from '../model/duration.js';
import { SCHEDULE_FIELDS } from '../schedules/schedule.js';
import { derivedArgument } from './derived-args.js';
import { jsonResult } from './snapshots.js';
import { START_ANNOTATIONS } from './start-task.js';
import { defineTool, type McpTool } from './tool-table.js';

type ScheduleView = Awaited<ReturnType<BackchannelClient['listSchedules']>>[number];
type ScheduleRequest = Parameters<BackchannelClient['addSchedule']>[0];

const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A schedule as the tools show it: its fields, next fire and last run in ISO time, the run's task and its state. */
function describeSchedule(view: ScheduleView): Record<string, unknown> {
  const { schedule, lastFire, lastRun } = view;
  return {
    name: schedule.name,
    ...(schedule.cron === undefined ? { every_ms: schedule.everyMs } : { cron: schedule.cron, tz: schedule.tz ?? null }),
    ...(schedule.preset === undefined ? { command: schedule.command } : { preset: schedule.preset }),
    overlap: schedule.overlap,
    catch_up: schedule.catchUp,
    paused: schedule.paused,
    next_fire_at: iso(view.nextFireAt) ?? null,
    active_runs: view.activeRuns,
    last_fire: lastFire ? { at: iso(lastFire.at), outcome: lastFire.outcome, reason: lastFire.reason ?? null } : null,
    last_run: lastRun ? { at: iso(lastRun.at), task_id: lastRun.taskId ?? null, state: view.lastRunState ?? null } : null,
  };
}

/** A duration argument in milliseconds, or a one-line error naming the argument. */
function durationMs(name: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new Error(`\`${name}\` must be a duration such as 30s, 5m, 1h or 7d, got ${JSON.stringify(text)}`);
  return ms;
}

/** One argument from a field of the schedule's one declaration (../schedules/schedule.ts): its JSON Schema and check. */
const fromSchedule = <K extends keyof typeof SCHEDULE_FIELDS>(name: string, field: K, description: string) =>
  derivedArgument(name, SCHEDULE_FIELDS[field] as zm.ZodMiniType<zm.output<(typeof SCHEDULE_FIELDS)[K]>>, { description });

const CREATE_SHAPE = {
  name: z.string().min(1).describe('The schedule name (letters, digits, ".", "_", "-"); a schedule of that name is replaced.'),
  cron: fromSchedule('cron', 'cron', 'When it fires: a cron expression of 5 fields (or 6, seconds first). Give `cron` or `every`.'),
  tz: fromSchedule('tz', 'tz', "With cron: the IANA time zone it is read in (e.g. Europe/Paris). Default: the hub's zone."),
  every: z.string().optional().describe('When it fires: a fixed interval such as 30s, 5m or 1h. Give `cron` or `every`.'),
  preset: fromSchedule('preset', 'preset', 'Name of a Backchannel preset each fire runs. Give either `preset` or `command`.'),
  command: z.string().optional().describe('Executable or script each fire runs as the sub-agent. Not a shell string.'),
  args: z.array(z.string()).optional().describe('Arguments for `command`.'),
  cwd: fromSchedule('cwd', 'cwd', 'Working directory of each run (absolute path).'),
  overlap: fromSchedule(
    'overlap',
    'overlap',
    'A fire while the last run still runs: skip it (default), buffer one, cancel the other, or allow both.',
  ),
  catch_up: fromSchedule('catch_up', 'catchUp', 'Fires missed while the hub was down: run the latest (default), none, or all of them.'),
  catch_up_window: z.string().optional().describe('How far back missed fires are caught up (a duration, default 7d).'),
  max_tokens: fromSchedule('max_tokens', 'maxTokens', 'Budget of each run: stop it once it reports more tokens.'),
  max_cost_usd: fromSchedule('max_cost_usd', 'maxCostUsd', 'Budget of each run: stop it once it reports a cost above this, in US dollars.'),
  paused: fromSchedule('paused', 'paused', 'Create it paused (its fires are recorded as skipped until resumed).'),
};

type CreateArgs = z.infer<z.ZodObject<typeof CREATE_SHAPE>>;

/** The tool's arguments as the hub's schedule request (its fields checked by the hub, one line per problem). */
function scheduleRequest(args: CreateArgs): ScheduleRequest {
  if ((args.command === undefined) === (args.preset === undefined)) {
    throw new Error('Give either `preset` (a preset name) or `command` (the sub-agent each fire runs)');
  }
  if (args.args && args.command === undefined) throw new Error('`args` goes with `command`');
  return {
    name: args.name,
    // A model's tool call: the `schedule` door judges it, and its runs carry MCP's budget.
    origin: 'mcp',
    ...(args.cron === undefined ? {} : { cron: args.cron }),
    ...(args.tz === undefined ? {} : { tz: args.tz }),
    ...(args.every === undefined ? {} : { everyMs: durationMs('every', args.every) }),
    ...(args.command === undefined ? {} : { command: [args.command, ...(args.args ?? [])] }),
    ...(args.preset === undefined ? {} : { preset: args.preset }),
    ...(args.cwd === undefined ? {} : { cwd: args.cwd }),
    ...(args.overlap === undefined ? {} : { overlap: args.overlap }),
    ...(args.catch_up === undefined ? {} : { catchUp: args.catch_up }),
    ...(args.catch_up_window === undefined ? {} : { catchUpWindowMs: durationMs('catch_up_window', args.catch_up_window) }),
    ...(args.max_tokens === undefined ? {} : { maxTokens: args.max_tokens }),
    ...(args.max_cost_usd === undefined ? {} : { maxCostUsd: args.max_cost_usd }),
    ...(args.paused === undefined ? {} : { paused: args.paused }),
  };
}

export const SCHEDULE_TOOLS: readonly McpTool[] = [
  defineTool({
    name: 'list_schedules',
    title: 'List schedules',
    description:
      'Lists the schedules of the Backchannel hub: when each fires next, its last fire (ran or skipped, and why) and its ' +
      'last run with that task id and state (get_task shows the run).',
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler(_args, { client }) {
      return jsonResult({ schedules: (await client.listSchedules()).map(describeSchedule) });
    },
  }),
  defineTool({
    name: 'create_schedule',
    title: 'Create a schedule',
    description:
      'Creates a schedule on the Backchannel hub that starts a sub-agent at fixed times (`cron`) or intervals (`every`), ' +
      "or replaces the schedule of that name. Every fire is recorded (list_schedules). The owner's run policy decides " +
      'whether the command may be scheduled: a refusal is an error and nothing is stored.',
    inputSchema: CREATE_SHAPE,
    // Like start_task: each fire runs an arbitrary program; a schedule of the same name is replaced.
    annotations: START_ANNOTATIONS,
    async handler(args, { client }) {
      return jsonResult(describeSchedule(await client.addSchedule(scheduleRequest(args))));
    },
  }),
];
