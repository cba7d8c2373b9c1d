/**
 * Budgets by door: the default budget of a task that sets none, per door it came through (the
 * config file's `budget:` section: `default`, then `cli`, `mcp`, `panel`, `gateway`, `control`).
 * A limit the task sets itself wins; a door's limit wins over `default`. The budget itself is
 * enforced in ../attempt-loop.ts from the agent's usage reports (../../model/usage.ts).
 */
import * as z from 'zod/mini';
import { firstProblem, must, noKey } from '../../model/shapes.js';
import { TASK_ORIGINS, type TaskOrigin, type TaskSpec } from '../../model/task.js';
import { BUDGET_KEYS, type TaskBudget } from '../../model/usage.js';
import { BrokerError } from '../errors.js';

/** The default budget of each door (`default`: every door without its own). */
export type DoorBudgets = Partial<Record<TaskOrigin | 'default', TaskBudget>>;

/** The spec with its door's default limits for those it does not set (the same spec when none apply). */
export function withDoorBudget(spec: TaskSpec, budgets: DoorBudgets | undefined): TaskSpec {
  if (!budgets) return spec;
  const door = spec.origin === undefined ? undefined : budgets[spec.origin];
  const fallback = budgets.default;
  let out: TaskSpec | undefined;
  for (const key of BUDGET_KEYS) {
    const value = door?.[key] ?? fallback?.[key];
    if (spec[key] !== undefined || value === undefined) continue;
    out ??= { ...spec };
    out[key] = value;
  }
  return out ?? spec;
}

const positive = (integer: boolean) => {
  const message = must(`must be a positive ${integer ? 'integer' : 'number'}`);
  const checks = [z.positive({ error: message }), ...(integer ? [z.int({ error: message })] : [])];
  return z.optional(z.number({ error: message }).check(...checks));
};

const LIMITS = z.strictObject(
  { max_tokens: positive(true), max_cost_usd: positive(false), max_turns: positive(true) },
  { error: (issue) => noKey('max_tokens, max_cost_usd, max_turns')(issue) ?? must('must be a mapping of limits')(issue) },
);

const DOORS = ['default', ...TASK_ORIGINS] as const;

/** The `budget:` section's shape: a mapping of doors to limits. */
const BUDGET_SECTION = z.strictObject(
  Object.fromEntries(DOORS.map((door) => [door, z.optional(LIMITS)])) as Record<(typeof DOORS)[number], z.ZodMiniOptional<typeof LIMITS>>,
  { error: (issue) => noKey(DOORS.join(', '))(issue) ?? must('must be a mapping of doors')(issue) },
);

/** A `budget:` section read, or throws a BrokerError naming the field (`file: budget.mcp.max_tokens must be …`). */
export function parseDoorBudgets(section: Record<string, unknown> | undefined, file: string): DoorBudgets | undefined {
  if (section === undefined) return undefined;
  const parsed = z.safeParse(BUDGET_SECTION, section);
  if (!parsed.success) throw new BrokerError('invalid_option', `${file}: ${firstProblem(parsed.error, 'budget')}`);
  const budgets: DoorBudgets = {};
  for (const door of DOORS) {
    const limits = parsed.data[door];
    if (!limits) continue;
    const budget: TaskBudget = {};
    if (limits.max_tokens !== undefined) budget.maxTokens = limits.max_tokens;
    if (limits.max_cost_usd !== undefined) budget.maxCostUsd = limits.max_cost_usd;
    if (limits.max_turns !== undefined) budget.maxTurns = limits.max_turns;
    budgets[door] = budget;
  }
  return budgets;
}
