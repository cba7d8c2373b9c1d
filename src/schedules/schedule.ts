/**
 * A schedule and the record of one of its fires, each declared once with zod (type, check and
 * one-line error from the same declaration). The vocabulary follows Temporal's schedules: overlap
 * `skip` (default) | `buffer-one` | `cancel-other` | `allow`; catch-up `latest` (default) | `none` |
 * `all` within a window (default 7 days). Every fire is recorded: it ran (naming its task) or was
 * skipped with one of SKIP_REASONS. Runs anywhere: no Node imports.
 */
import { z } from 'zod';
import { TASK_ORIGINS } from '../model/origins.js';

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

export const scheduleSchema = z
  .object({
    name: z.string().regex(NAME, 'a schedule name is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit'),
    /** A cron expression of 5 fields, or 6 with seconds first. */
    cron: z.string().min(1).optional(),
    /** The IANA zone the cron expression is read in. @default the hub's local zone */
    tz: z.string().min(1).optional(),
    /** A fixed interval instead of cron, anchored at `createdAt`. */
    everyMs: z.number().int().min(MIN_EVERY_MS).optional(),
    overlap: z.enum(OVERLAP_POLICIES).default('skip'),
    catchUp: z.enum(CATCH_UP_POLICIES).default('latest'),
    catchUpWindowMs: z.number().int().nonnegative().default(DEFAULT_CATCH_UP_WINDOW_MS),
    /** The command line a fire runs (argv), or a preset's name. */
    command: z.array(z.string()).min(1).optional(),
    preset: z.string().min(1).optional(),
    cwd: z.string().min(1).optional(),
    /** A git repository: each fire runs as a coding task in a fresh worktree of it (as `run --worktree`). */
    worktree: z.string().min(1).optional(),
    /** Each fire runs the command as an ACP agent (`TaskRequest.acp`, docs/acp.md); a named agent's preset sets it. */
    acp: z
      .union([
        z.boolean(),
        z.object({ agent: z.string().min(1).max(100).optional(), onBudget: z.enum(['pause', 'stop']).optional() }).strict(),
      ])
      .optional(),
    /** The input of each run: a preset's (a named ACP agent's prompt). */
    input: z.unknown().optional(),
    /** The budget of each run. */
    maxTokens: z.number().int().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    /** The budget of all its runs over a rolling 24 h: once their usage reached it, fires are skipped `budget_spent`. */
    maxTokensPerDay: z.number().int().positive().optional(),
    maxCostUsdPerDay: z.number().positive().optional(),
    paused: z.boolean().default(false),
    /**
     * The door the schedule was made through. `cli` (the owner's own terminal) is trusted: its fires run
     * as the owner's, with `cli`'s budget. Any other (or none) is judged by the run policy's `schedule`
     * door, and its runs carry that door's budget (the hub's panel and HTTP API set `panel`, whatever
     * the request says).
     */
    origin: z.enum(TASK_ORIGINS).optional(),
    /** Epoch ms; the anchor of `everyMs` and the earliest time a fire can be due. */
    createdAt: z.number().int().nonnegative(),
  })
  .refine((s) => (s.cron === undefined) !== (s.everyMs === undefined), 'a schedule has exactly one of --cron and --every')
  .refine((s) => (s.command === undefined) !== (s.preset === undefined), 'a schedule runs exactly one of a command and --preset')
  .refine((s) => s.tz === undefined || s.cron !== undefined, '--tz only applies to --cron');

export type Schedule = z.infer<typeof scheduleSchema>;
export type ScheduleInput = z.input<typeof scheduleSchema>;

export const fireRecordSchema = z.object({
  schedule: z.string(),
  /** The fire time (epoch ms): the time the schedule named, not when the hub got to it. */
  at: z.number().int().nonnegative(),
  /** When one record stands for a run of skipped fires (a hub down for a day): the last of them, and how many. */
  until: z.number().int().nonnegative().optional(),
  count: z.number().int().positive().optional(),
  /**
   * `buffered`: it waits for the active run to end (overlap `buffer-one`); a `ran` record for the same time follows.
   * `elsewhere`: another hub on the same fleet claimed the fire (`hub` names it) and records what it did.
   */
  outcome: z.enum(['ran', 'skipped', 'buffered', 'elsewhere']),
  taskId: z.string().optional(),
  reason: z.enum(SKIP_REASONS).optional(),
  /** A fire run after its time because the hub was down at it (catch-up), or by `run-now`. */
  catchUp: z.boolean().optional(),
  manual: z.boolean().optional(),
  /** The hub that claimed an `elsewhere` fire (its fleet id: host, pid and a random part). */
  hub: z.string().optional(),
  recordedAt: z.number().int().nonnegative(),
});

export type FireRecord = z.infer<typeof fireRecordSchema>;

/** The one-line error of an invalid schedule: the first issue, with its field. */
export function parseSchedule(input: unknown): { ok: true; schedule: Schedule } | { ok: false; message: string } {
  const parsed = scheduleSchema.safeParse(input);
  if (parsed.success) return { ok: true, schedule: parsed.data };
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return { ok: false, message: `invalid schedule: ${field}${issue.message}` };
}
