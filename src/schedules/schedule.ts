/**
 * A schedule and the record of one of its fires, each declared once with zod (type, check and
 * one-line error from the same declaration). The vocabulary follows Temporal's schedules: overlap
 * `skip` (default) | `buffer-one` | `cancel-other` | `allow`; catch-up `latest` (default) | `none` |
 * `all` within a window (default 7 days). Every fire is recorded: it ran (naming its task) or was
 * skipped with one of SKIP_REASONS. Runs anywhere (the panel's bundle too): no Node imports, zod/mini,
 * and the repository's one message template (src/model/shapes.ts).
 */
import * as z from 'zod/mini';
import { TASK_ORIGINS } from '../model/origins.js';
import { boolean, describe, expected, firstProblem, oneOf, PLACE, text } from '../model/shapes.js';
import { ON_BUDGET } from '../model/task-request.js';

export const OVERLAP_POLICIES = ['skip', 'buffer-one', 'cancel-other', 'allow'] as const;
export const CATCH_UP_POLICIES = ['latest', 'none', 'all'] as const;
/**
 * Why a fire did not run: another run was active, the schedule was paused, the hub was down, the
 * budget was spent, or the run policy refused its command at the fire (it changed since the schedule was made).
 */
export const SKIP_REASONS = ['overlap', 'paused', 'hub_down', 'budget_spent', 'refused'] as const;

export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];
export type SkipReason = (typeof SKIP_REASONS)[number];

/** 7 days: a hub down over a long weekend still catches up once; older misses are recorded, not run. */
export const DEFAULT_CATCH_UP_WINDOW_MS = 7 * 86_400_000;
/** The shortest `--every`: a scheduler tick is ~1 s, so anything shorter could not be honoured. */
export const MIN_EVERY_MS = 1000;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** An integer ≥ `min` (epoch ms, counts, token caps), in the one message template. */
function integer(min: number) {
  const what = min === 0 ? 'a non-negative integer' : min === 1 ? 'a positive integer' : `an integer of at least ${min}`;
  const error = expected(what);
  return z.number({ error }).check(z.int({ error }), z.minimum(min, { error }));
}

/** A number above 0 (a dollar cap). */
function positive() {
  const error = expected('a positive number');
  return z.number({ error }).check(z.positive({ error }));
}

/** `acp`: true, or {agent?, onBudget?}, as the task request's (src/model/task-request.ts). */
const ACP = z.union(
  [
    boolean(),
    z.strictObject(
      { agent: z.optional(text({ max: 100 })), onBudget: z.optional(oneOf(ON_BUDGET)) },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys' ? `Unexpected \`${PLACE}.${String(issue.keys[0]).slice(0, 40)}\`` : undefined,
      },
    ),
  ],
  { error: expected('true or an object') },
);

/** A schedule's fields, declared once: the store, the hub's scheduler, the panel's API, the CLI and MCP read them through it. */
export const SCHEDULE_FIELDS = {
  name: z
    .string({ error: expected('a string') })
    .check(z.regex(NAME, { error: () => 'a schedule name is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit' })),
  /** A cron expression of 5 fields, or 6 with seconds first. */
  cron: z.optional(text()),
  /** The IANA zone the cron expression is read in. @default the hub's local zone */
  tz: z.optional(text({ max: 100 })),
  /** A fixed interval instead of cron, anchored at `createdAt`. */
  everyMs: z.optional(integer(MIN_EVERY_MS)),
  overlap: z._default(oneOf(OVERLAP_POLICIES), 'skip'),
  catchUp: z._default(oneOf(CATCH_UP_POLICIES), 'latest'),
  catchUpWindowMs: z._default(integer(0), DEFAULT_CATCH_UP_WINDOW_MS),
  /** The command line a fire runs (argv), or a preset's name. */
  command: z.optional(
    z
      .array(text({ allowEmpty: true }), { error: expected('an array of strings') })
      .check(z.minLength(1, { error: expected('a command line of at least one word') })),
  ),
  preset: z.optional(text()),
  cwd: z.optional(text()),
  /** A git repository: each fire runs as a coding task in a fresh worktree of it (as `run --worktree`). */
  worktree: z.optional(text()),
  /** Each fire runs the command as an ACP agent (`TaskRequest.acp`, docs/acp.md); a named agent's preset sets it. */
  acp: z.optional(ACP),
  /** The input of each run: a preset's (a named ACP agent's prompt). */
  input: z.optional(z.unknown()),
  /** The budget of each run. */
  maxTokens: z.optional(integer(1)),
  maxCostUsd: z.optional(positive()),
  /** The budget of all its runs over a rolling 24 h: once their usage reached it, fires are skipped `budget_spent`. */
  maxTokensPerDay: z.optional(integer(1)),
  maxCostUsdPerDay: z.optional(positive()),
  paused: z._default(boolean(), false),
  /**
   * The door the schedule was made through. `cli` (the owner's own terminal) is trusted: its fires run
   * as the owner's, with `cli`'s budget. Any other (or none) is judged by the run policy's `schedule`
   * door, and its runs carry that door's budget (the hub's panel and HTTP API set `panel`, whatever
   * the request says).
   */
  origin: z.optional(oneOf(TASK_ORIGINS)),
};

type Fields = { cron?: string; everyMs?: number; tz?: string; command?: string[]; preset?: string };

/** What a schedule must hold together, each with its one line. */
const TOGETHER = [
  z.refine<Fields>((s) => (s.cron === undefined) !== (s.everyMs === undefined), {
    error: () => 'a schedule has exactly one of --cron and --every',
  }),
  z.refine<Fields>((s) => (s.command === undefined) !== (s.preset === undefined), {
    error: () => 'a schedule runs exactly one of a command and --preset',
  }),
  z.refine<Fields>((s) => s.tz === undefined || s.cron !== undefined, { error: () => '--tz only applies to --cron' }),
];

const objectError = {
  error: (issue: { code: string; input?: unknown }) => (issue.code === 'invalid_type' ? expected('an object')(issue) : undefined),
};

export const scheduleSchema = z
  .object(
    {
      ...SCHEDULE_FIELDS,
      /** Epoch ms; the anchor of `everyMs` and the earliest time a fire can be due. */
      createdAt: integer(0),
    },
    objectError,
  )
  .check(...TOGETHER);

export type Schedule = z.output<typeof scheduleSchema>;
export type ScheduleInput = z.input<typeof scheduleSchema>;
/** What `addSchedule` takes: a schedule's fields without `createdAt` (the hub's clock sets it). */
export type ScheduleRequest = Omit<ScheduleInput, 'createdAt'>;

/** A schedule's fields as a front-end gives them (no `createdAt`), held together. */
const REQUEST_FIELDS = z.object(SCHEDULE_FIELDS).check(...TOGETHER);

export const fireRecordSchema = z.object({
  schedule: z.string(),
  /** The fire time (epoch ms): the time the schedule named, not when the hub got to it. */
  at: integer(0),
  /** When one record stands for a run of skipped fires (a hub down for a day): the last of them, and how many. */
  until: z.optional(integer(0)),
  count: z.optional(integer(1)),
  /**
   * `buffered`: it waits for the active run to end (overlap `buffer-one`); a `ran` record for the same time follows.
   * `elsewhere`: another hub on the same fleet claimed the fire (`hub` names it) and records what it did.
   */
  outcome: z.enum(['ran', 'skipped', 'buffered', 'elsewhere']),
  taskId: z.optional(z.string()),
  reason: z.optional(z.enum(SKIP_REASONS)),
  /** A fire run after its time because the hub was down at it (catch-up), or by `run-now`. */
  catchUp: z.optional(z.boolean()),
  manual: z.optional(z.boolean()),
  /** The hub that claimed an `elsewhere` fire (its fleet id: host, pid and a random part). */
  hub: z.optional(z.string()),
  recordedAt: integer(0),
});

export type FireRecord = z.output<typeof fireRecordSchema>;

/** The one-line problem of a schedule, in the repository's one template: `invalid schedule: Expected `everyMs` to be …`. */
function problemOf(error: z.core.$ZodError): string {
  return `invalid schedule: ${firstProblem(error)}`;
}

/** A schedule checked, or its one-line problem. */
export function parseSchedule(input: unknown): { ok: true; schedule: Schedule } | { ok: false; message: string } {
  const parsed = z.safeParse(scheduleSchema, input);
  return parsed.success ? { ok: true, schedule: parsed.data } : { ok: false, message: problemOf(parsed.error) };
}

/** A front-end's request checked with the same declaration, or its one-line problem in `parseSchedule`'s words. */
export function scheduleRequestProblem(input: unknown): string | undefined {
  const parsed = z.safeParse(REQUEST_FIELDS, input);
  return parsed.success ? undefined : problemOf(parsed.error);
}

/**
 * What `addSchedule` takes at the edge (the panel's API, the control endpoint, so MCP too): an object,
 * its fields checked as the hub's scheduler and the store check them, in the same words; `createdAt` is
 * the hub's to set (dropped). The fields pass on as given: the hub fills in the defaults once.
 */
export const SCHEDULE_REQUEST = z.pipe(
  z.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: (issue) => `Expected the schedule to be an object, got ${describe(issue.input)}`,
  }),
  z.transform(({ createdAt: _createdAt, ...fields }: Record<string, unknown>, ctx) => {
    const problem = scheduleRequestProblem(fields);
    if (problem === undefined) return fields as ScheduleRequest;
    ctx.issues.push({ code: 'custom', input: fields, message: problem });
    return z.NEVER;
  }),
);
