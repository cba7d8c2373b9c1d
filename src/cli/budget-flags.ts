/**
 * The budget flags of the commands that start tasks (`run`, `schedule add`): `--max-tokens`,
 * `--max-cost-usd`, `--max-turns` as the task request's `maxTokens`, `maxCostUsd`, `maxTurns`
 * (src/model/task-request.ts; enforced by the broker from the agent's usage reports).
 */
import type { TaskBudget } from '../model/usage.js';

export const BUDGET_FLAGS = {
  'max-tokens': { type: 'string' },
  'max-cost-usd': { type: 'string' },
  'max-turns': { type: 'string' },
} as const;

export const BUDGET_FLAGS_HELP = `  --max-tokens <n>          budget: stop the task (budget_exceeded) once the agent reports more tokens
  --max-cost-usd <x>        budget: stop it once the agent reports a cost above x US dollars
  --max-turns <n>           budget: stop it once the agent reports more model turns`;

interface BudgetFlagValues {
  'max-tokens'?: string;
  'max-cost-usd'?: string;
  'max-turns'?: string;
}

/** The budget the flags give (only the limits given); throws a one-line usage message for a bad value. */
export function budgetFlagOptions(values: BudgetFlagValues): TaskBudget {
  const budget: TaskBudget = {};
  const tokens = positive('max-tokens', values['max-tokens'], true);
  const cost = positive('max-cost-usd', values['max-cost-usd'], false);
  const turns = positive('max-turns', values['max-turns'], true);
  if (tokens !== undefined) budget.maxTokens = tokens;
  if (cost !== undefined) budget.maxCostUsd = cost;
  if (turns !== undefined) budget.maxTurns = turns;
  return budget;
}

function positive(flag: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`--${flag} expects a positive ${integer ? 'integer' : 'number'}, got "${value}"`);
  }
  return n;
}
