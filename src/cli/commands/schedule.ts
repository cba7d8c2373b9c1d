/**
 * `backchannel schedule add|ls|show|pause|resume|rm|run-now` (docs/schedules.md): the hub's schedules
 * through the one client, one table of actions (`ACTIONS`), each with its options, its positionals and
 * a few lines over a client call. Every action needs a running hub (the schedules fire there): without
 * one it is refused with one line. `--json` prints the call's reply exactly; failures are one line (or
 * one JSON object) with the exit code of the error table.
 */
import path from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import {
  MAX_FIRE_PAGE_SIZE,
  openClient,
  type BackchannelClient,
  type FireRecord,
  type ScheduleRequest,
  type ScheduleView,
} from '../../client/index.js';
import { parseDuration } from '../../model/duration.js';
import { scheduleRequestProblem } from '../../schedules/schedule.js';
import { shortTaskId } from '../../model/task-ids.js';
import { commandFailed, EXIT, parseCommandLine, usageError, type CliCommand, type CommandLine } from '../command.js';
import { writeText } from '../terminal-text.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

interface Action<O extends OptionsConfig = OptionsConfig> {
  /** The line of the help that says how it is called, and what it does. */
  usage: string;
  summary: string;
  options: O;
  /** How many positionals before `--`: [min, max]. */
  positionals: [number, number];
  run(line: CommandLine<O>, client: BackchannelClient): Promise<number>;
  /** Checks the command line before the hub is opened; returns a usage message. */
  check?(line: CommandLine<O>): string | undefined;
}

const JSON_FLAG = { json: { type: 'boolean' } } as const;

const HELP = `Usage: backchannel schedule <action> [options]

Schedules on the running hub (the desktop app or \`backchannel serve\`), which fires them, records
every fire (ran, naming its task; or skipped, with its reason) and keeps them across restarts.

Actions:
  add <name> (--cron "<5 or 6 fields>" [--tz <zone>] | --every <duration>) [options] -- <command…>
  add <name> (--cron … | --every …) --preset <name> [options]
                          create (or replace) a schedule; its command is judged by the run
                          policy as the \`schedule\` door now, and again at every fire
  ls                      each schedule: next fire (local time), last run, its task's state
  show <name> [--limit n] the schedule and its fire history, newest first
  pause <name>            its fires are recorded as skipped (paused) until resumed
  resume <name>           fires again from the next fire time (the paused ones are not replayed)
  rm <name>               remove it (its fire history stays)
  run-now <name>          run its command now, outside its times; prints the task id

Options of add:
  --cron "<fields>"         a cron expression: 5 fields (minute first) or 6 (seconds first)
  --tz <zone>               the IANA zone the cron expression is read in (default: the hub's)
  --every <duration>        a fixed interval instead: 30s, 5m, 1h (at least 1s)
  --overlap <policy>        a fire while a run is active: skip (default), buffer-one, cancel-other, allow
  --catch-up <policy>       fires missed while the hub was down: latest (default), none, all
  --catch-up-window <d>     how far back a missed fire is still caught up (default: 7d)
  --worktree <repo>         each run works in a new git worktree of <repo>
  --max-tokens <n>          budget of each run: stop it once the agent reports more tokens
  --max-cost-usd <x>        budget of each run: stop it once the agent reports a cost above x dollars
  --max-tokens-per-day <n>  cap of all its runs over the last 24 h: a fire past it is skipped (budget_spent)
  --max-cost-usd-per-day <x>  the same cap in dollars
  --cwd <dir>               the directory the command runs in (default: this one)
  --preset <name>           run a preset of the hub (the panel's New task list) instead of a
                            command: the schedule keeps the preset's command line

Every action:
  --json                    the hub's reply as JSON
  -h, --help                show this help

Exit codes: 0 done, 1 failed (unknown schedule, refused by the run policy, no hub), 2 bad usage.`;

const ADD_OPTIONS = {
  ...JSON_FLAG,
  cron: { type: 'string' },
  tz: { type: 'string' },
  every: { type: 'string' },
  overlap: { type: 'string' },
  'catch-up': { type: 'string' },
  'catch-up-window': { type: 'string' },
  worktree: { type: 'string' },
  'max-tokens': { type: 'string' },
  'max-cost-usd': { type: 'string' },
  'max-tokens-per-day': { type: 'string' },
  'max-cost-usd-per-day': { type: 'string' },
  cwd: { type: 'string' },
  preset: { type: 'string' },
} as const;

/** A schedule action on one named schedule that prints its view (`pause`, `resume`). */
function pausing(paused: boolean): Action<typeof JSON_FLAG> {
  return {
    usage: `${paused ? 'pause' : 'resume'} <name>`,
    summary: paused ? 'pause a schedule' : 'resume a schedule',
    options: JSON_FLAG,
    positionals: [1, 1],
    async run(line, client) {
      const view = await client.setSchedulePaused(line.positionals[0]!, paused);
      if (line.values.json) return printJson(view);
      const next = view.nextFireAt === undefined ? '' : `; next fire ${localTime(view.nextFireAt)}`;
      writeText(process.stdout, `${paused ? 'paused' : 'resumed'} ${view.schedule.name}${next}\n`);
      return EXIT.ok;
    },
  };
}

const ACTIONS: Record<string, Action> = {
  add: {
    usage: 'add <name> (--cron … | --every …) -- <command…>',
    summary: 'create a schedule',
    options: ADD_OPTIONS,
    positionals: [1, 1],
    check: (line) => addRequest(line as CommandLine<typeof ADD_OPTIONS>).problem,
    async run(line, client) {
      const { request } = addRequest(line as CommandLine<typeof ADD_OPTIONS>);
      const view = await client.addSchedule(request!);
      if (line.values.json) return printJson(view);
      const next = view.nextFireAt === undefined ? 'it never fires' : `next fire ${localTime(view.nextFireAt)}`;
      writeText(process.stdout, `schedule ${view.schedule.name} added (${describeTimes(view)}); ${next}\n`);
      return EXIT.ok;
    },
  },
  ls: {
    usage: 'ls',
    summary: 'list the schedules',
    options: JSON_FLAG,
    positionals: [0, 0],
    async run(line, client) {
      const views = await client.listSchedules();
      if (line.values.json) return printJson(views);
      if (views.length === 0) {
        process.stdout.write('No schedules.\n');
        return EXIT.ok;
      }
      const rows = views.map((view) => [
        view.schedule.name,
        view.schedule.paused ? 'paused' : view.nextFireAt === undefined ? '-' : localTime(view.nextFireAt),
        view.lastRun ? localTime(view.lastRun.at) : '-',
        view.lastRun?.taskId ? shortTaskId(view.lastRun.taskId) : '-',
        view.lastRun ? (view.lastRunState ?? 'gone') : '-',
        describeTimes(view),
      ]);
      printTable(['NAME', 'NEXT FIRE', 'LAST RUN', 'TASK', 'STATE', 'SCHEDULE'], rows);
      return EXIT.ok;
    },
  },
  show: {
    usage: 'show <name> [--limit n]',
    summary: 'show a schedule and its fire history',
    options: { ...JSON_FLAG, limit: { type: 'string' } },
    positionals: [1, 1],
    check: (line) => {
      const limit = line.values.limit;
      const n = Number(limit);
      return limit === undefined || (Number.isInteger(n) && n >= 1 && n <= MAX_FIRE_PAGE_SIZE)
        ? undefined
        : `Expected \`--limit\` to be an integer from 1 to ${MAX_FIRE_PAGE_SIZE}, got \`${String(limit)}\``;
    },
    async run(line, client) {
      const limit = line.values.limit === undefined ? undefined : Number(line.values.limit);
      const details = await client.getSchedule(line.positionals[0]!, limit === undefined ? undefined : { limit });
      if (line.values.json) return printJson(details);
      const { schedule } = details;
      const fields: Array<[string, string | undefined]> = [
        ['name', schedule.name],
        ['schedule', describeTimes(details)],
        ['next fire', schedule.paused ? 'paused' : details.nextFireAt === undefined ? 'never' : localTime(details.nextFireAt)],
        ['runs', schedule.command ? schedule.command.join(' ') : `preset ${schedule.preset!}`],
        ['cwd', schedule.cwd],
        ['worktree', schedule.worktree],
        ['overlap', schedule.overlap],
        ['catch-up', `${schedule.catchUp} within ${describeMs(schedule.catchUpWindowMs)}`],
        ['budget', describeBudget(schedule.maxTokens, schedule.maxCostUsd)],
        ['per day', describeBudget(schedule.maxTokensPerDay, schedule.maxCostUsdPerDay)],
        ['active runs', String(details.activeRuns)],
        ['created', localTime(schedule.createdAt)],
      ];
      for (const [name, value] of fields) if (value !== undefined) writeText(process.stdout, `${name.padEnd(12)} ${value}\n`);
      if (details.fires.length === 0) {
        process.stdout.write('\nNo fires yet.\n');
        return EXIT.ok;
      }
      const shown = details.next === undefined ? '' : ` (newest ${details.fires.length} of ${details.total}; --limit shows more)`;
      process.stdout.write(`\nFires, newest first${shown}:\n`);
      printTable(
        ['AT', 'OUTCOME', 'DETAIL'],
        details.fires.map((fire) => [localTime(fire.at), fire.outcome, describeFire(fire)]),
      );
      return EXIT.ok;
    },
  },
  pause: pausing(true),
  resume: pausing(false),
  rm: {
    usage: 'rm <name>',
    summary: 'remove a schedule',
    options: JSON_FLAG,
    positionals: [1, 1],
    async run(line, client) {
      const name = line.positionals[0]!;
      await client.removeSchedule(name);
      if (line.values.json) return printJson({ name, removed: true });
      writeText(process.stdout, `removed ${name}\n`);
      return EXIT.ok;
    },
  },
  'run-now': {
    usage: 'run-now <name>',
    summary: "run a schedule's command now",
    options: JSON_FLAG,
    positionals: [1, 1],
    async run(line, client) {
      const fire = await client.runScheduleNow(line.positionals[0]!);
      if (line.values.json) return printJson(fire);
      process.stdout.write(`${fire.taskId ?? ''}\n`);
      return EXIT.ok;
    },
  },
};

export const command: CliCommand = {
  async run(argv) {
    const [name, ...rest] = argv;
    if (name === undefined || name === '--help' || name === '-h') {
      process.stdout.write(HELP + '\n');
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    const action = Object.hasOwn(ACTIONS, name) ? ACTIONS[name]! : undefined;
    if (!action) return usageError(`backchannel schedule: unknown action "${name}" (${Object.keys(ACTIONS).join(', ')})`, HELP);
    const label = `schedule ${name}`;
    const line = parseCommandLine(label, rest, action.options, HELP, true);
    if (typeof line === 'number') return line;
    const end = rest.indexOf('--');
    const before = end < 0 ? line.positionals.length : line.positionals.length - (rest.length - end - 1);
    const [min, max] = action.positionals;
    if (before < min) return usageError(`backchannel ${label}: missing the schedule name`, HELP);
    if (before > max) {
      const extra = line.positionals[max]!;
      return usageError(
        name === 'add'
          ? `backchannel ${label}: put \`--\` before the command (backchannel schedule add <name> … -- <command…>), got "${extra}"`
          : `backchannel ${label}: unexpected argument "${extra}"`,
        HELP,
      );
    }
    if (end >= 0 && name !== 'add') return usageError(`backchannel ${label}: takes no command after \`--\``, HELP);
    const problem = action.check?.(line);
    if (problem) return usageError(`backchannel ${label}: ${problem}`, HELP);
    let client: BackchannelClient | undefined;
    try {
      client = await openClient({ withoutHub: 'refuse' });
      return await action.run(line, client);
    } catch (error) {
      return commandFailed(label, error);
    } finally {
      await client?.close();
    }
  },
};

/** The request `add` sends, or the first problem of its command line (one line, a usage error). */
function addRequest(line: CommandLine<typeof ADD_OPTIONS>): { request?: ScheduleRequest; problem?: string } {
  const v = line.values;
  const [name, ...command] = line.positionals;
  const fail = (problem: string) => ({ problem });
  // The owner's own terminal: its schedules run as the owner's, as `run` does (docs/run-policy.md).
  const request: ScheduleRequest = { name: name!, origin: 'cli' };
  if (v.cron !== undefined) request.cron = v.cron;
  if (v.tz !== undefined) request.tz = v.tz;
  if (v.every !== undefined) {
    const ms = parseDuration(v.every);
    if (ms === undefined) return fail(`Expected \`--every\` to be a duration like 30s, 5m or 1h, got \`${v.every}\``);
    request.everyMs = ms;
  }
  if (v['catch-up-window'] !== undefined) {
    const ms = parseDuration(v['catch-up-window']);
    if (ms === undefined) return fail(`Expected \`--catch-up-window\` to be a duration like 12h or 7d, got \`${v['catch-up-window']}\``);
    request.catchUpWindowMs = ms;
  }
  if (v.overlap !== undefined) request.overlap = v.overlap as ScheduleRequest['overlap'];
  if (v['catch-up'] !== undefined) request.catchUp = v['catch-up'] as ScheduleRequest['catchUp'];
  for (const [flag, key, integer] of [
    ['max-tokens', 'maxTokens', true],
    ['max-cost-usd', 'maxCostUsd', false],
    ['max-tokens-per-day', 'maxTokensPerDay', true],
    ['max-cost-usd-per-day', 'maxCostUsdPerDay', false],
  ] as const) {
    const text = v[flag];
    if (text === undefined) continue;
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
      return fail(`Expected \`--${flag}\` to be a positive ${integer ? 'integer' : 'number'}, got \`${text}\``);
    request[key] = n;
  }
  if (v.worktree !== undefined) request.worktree = path.resolve(v.worktree);
  if (command.length > 0) request.command = command;
  if (v.preset !== undefined) request.preset = v.preset;
  // The hub runs a command where it was scheduled from, unless told otherwise.
  if (v.cwd !== undefined || command.length > 0) request.cwd = path.resolve(v.cwd ?? process.cwd());
  // The schedule's one declaration (src/schedules/schedule.ts), as the hub checks it: found before any hub is asked.
  const problem = scheduleRequestProblem(request);
  return problem === undefined ? { request } : fail(problem);
}

function printJson(value: unknown): number {
  process.stdout.write(JSON.stringify(value) + '\n');
  return EXIT.ok;
}

/** Columns split by two spaces; the last one (free text) is not padded. Agent text is neutralised. */
function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows])
    writeText(process.stdout, row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ') + '\n');
}

/** `2026-12-05T10:00:02+01:00`: this machine's local time with its offset, one word (the columns stay split by whitespace). */
function localTime(ms: number): string {
  const date = new Date(ms);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return (
    `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

/** `every 2s`, `cron 0 3 * * * Europe/Berlin`. */
function describeTimes({ schedule }: Pick<ScheduleView, 'schedule'>): string {
  if (schedule.everyMs !== undefined) return `every ${describeMs(schedule.everyMs)}`;
  return `cron ${schedule.cron!}${schedule.tz ? ` ${schedule.tz}` : ''}`;
}

/** `2s`, `5m`, `1h30m`, `7d`: as people write a duration (what `parseDuration` reads back). */
function describeMs(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  let rest = ms;
  let text = '';
  for (const [unit, size] of units) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return rest > 0 || text === '' ? `${text}${rest}ms` : text;
}

function describeBudget(maxTokens: number | undefined, maxCostUsd: number | undefined): string | undefined {
  const parts = [maxTokens === undefined ? '' : `${maxTokens} tokens`, maxCostUsd === undefined ? '' : `$${maxCostUsd}`].filter(Boolean);
  return parts.length ? parts.join(', ') : undefined;
}

/** What a fire did: ran → its task (short id, catch-up or manual); skipped → its reason (and how many); elsewhere → the hub. */
function describeFire(fire: FireRecord): string {
  if (fire.outcome === 'ran') {
    const how = fire.manual ? ' (run-now)' : fire.catchUp ? ' (catch-up)' : '';
    return `task ${fire.taskId ? shortTaskId(fire.taskId) : '?'}${how}`;
  }
  if (fire.outcome === 'buffered') return 'waits for the active run (buffer-one)';
  if (fire.outcome === 'elsewhere') return `decided by hub ${fire.hub ?? '?'} (fleet)`;
  const range = fire.until === undefined ? '' : ` until ${localTime(fire.until)}`;
  const count = fire.count === undefined ? '' : ` (${fire.count} fires)`;
  return `${fire.reason ?? 'skipped'}${range}${count}`;
}
