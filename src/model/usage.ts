/**
 * What an agent spent, read ONE way everywhere (the budget guard, `stats` and Insights, the panel, the
 * gateway's usage): from a payload's `meta.token_usage` (the protocol's `{input, output}`), `meta.usage`
 * or `data.usage` (OpenAI's `prompt_tokens`/`completion_tokens`, Anthropic's `input_tokens`/
 * `output_tokens`, or camelCase), the cost from `meta.cost_usd` (or Claude Code's `total_cost_usd`),
 * the turns from `meta.num_turns`. A report is the run's total so far (as a final payload's meta
 * always was): a later report replaces an earlier one, it is not added to it.
 *
 * And the budget a task may spend (`maxTokens`, `maxCostUsd`, `maxTurns`), with the one check that
 * says when a usage is over it. Runs anywhere: no Node or DOM imports.
 */

/** A task's usage so far. `tokens` = input + output. */
export interface TaskUsage {
  input: number;
  output: number;
  /** Dollars, when the agent reported a cost. */
  costUsd?: number;
  /** Model turns, when the agent reported them. */
  turns?: number;
}

/** The most a task may spend; each limit is optional. */
export interface TaskBudget {
  maxTokens?: number;
  maxCostUsd?: number;
  maxTurns?: number;
}

/** The budget's fields, in the order a message names them. */
export const BUDGET_KEYS = ['maxTokens', 'maxCostUsd', 'maxTurns'] as const satisfies readonly (keyof TaskBudget)[];

const INPUT_NAMES = ['input', 'prompt_tokens', 'input_tokens', 'inputTokens', 'promptTokens'];
const OUTPUT_NAMES = ['output', 'completion_tokens', 'output_tokens', 'outputTokens', 'completionTokens'];
const COST_NAMES = ['cost_usd', 'total_cost_usd', 'costUsd'];
const TURN_NAMES = ['num_turns', 'turns'];

/**
 * The most one report may say, per figure: a trillion tokens, ten million dollars, a billion turns.
 * Far beyond any real run, and far below where sums lose precision or reach `Infinity` (one report
 * of 1e308 tokens made the `stats` totals Infinity for a hub's whole history, docs/reliability.md
 * Y38). A report with a figure beyond these, or not a finite non-negative number, is refused whole.
 */
export const USAGE_RANGE = { tokens: 1e12, costUsd: 1e7, turns: 1e9 } as const;

/** One payload's usage report as read: the usage, or why the report was refused (both absent: none). */
export interface UsageReading {
  usage?: TaskUsage;
  /** "meta.token_usage.input 1e+308 is out of range (0 to 1000000000000)": the report counts for nothing. */
  refused?: string;
}

/**
 * The usage one payload reports, or undefined when it reports none (or its report is refused:
 * `readUsage` says why). Sources in order: `meta.token_usage`, `meta.usage`, `data.usage` (the first
 * one with a token count wins); cost and turns from `meta`.
 */
export function reportedUsage(meta: unknown, data?: unknown): TaskUsage | undefined {
  return readUsage(meta, data).usage;
}

/** What a payload without meta or data.usage reports (frozen: one object shared by every caller). */
const NO_REPORT: UsageReading = Object.freeze({});

/** `reportedUsage`, saying why a report was refused (a figure not finite, negative, or out of USAGE_RANGE). */
export function readUsage(meta: unknown, data?: unknown): UsageReading {
  const m = asRecord(meta);
  // Most payloads (a progress partial) report nothing: answered before any reader is built.
  if (m === undefined && asRecord(data)?.usage === undefined) return NO_REPORT;
  const reader = new FigureReader();
  const sources = [
    ['meta.token_usage', m?.token_usage],
    ['meta.usage', m?.usage],
    ['data.usage', asRecord(data)?.usage],
  ] as const;
  let usage: TaskUsage | undefined;
  for (const [where, source] of sources) {
    const s = asRecord(source);
    if (!s) continue;
    const input = reader.first(s, where, INPUT_NAMES, USAGE_RANGE.tokens);
    const output = reader.first(s, where, OUTPUT_NAMES, USAGE_RANGE.tokens);
    if (input !== undefined || output !== undefined) {
      usage = { input: input ?? 0, output: output ?? 0 };
      break;
    }
    // Only a total (`{total: n}`): counted as output, so the sum is right.
    const total = reader.first(s, where, ['total', 'total_tokens'], USAGE_RANGE.tokens);
    if (total !== undefined) {
      usage = { input: 0, output: total };
      break;
    }
  }
  const costUsd = m && reader.first(m, 'meta', COST_NAMES, USAGE_RANGE.costUsd, false);
  const turns = m && reader.first(m, 'meta', TURN_NAMES, USAGE_RANGE.turns);
  if (reader.refused !== undefined) return { refused: reader.refused };
  if (costUsd === undefined && turns === undefined) return usage ? { usage } : {};
  return {
    usage: {
      ...(usage ?? { input: 0, output: 0 }),
      ...(costUsd !== undefined ? { costUsd } : {}),
      ...(turns !== undefined ? { turns } : {}),
    },
  };
}

/** True when every figure of `usage` is finite, non-negative and within USAGE_RANGE (a usage read back from history). */
export function usageInRange(usage: TaskUsage): boolean {
  const ok = (value: number | undefined, max: number) => value === undefined || (Number.isFinite(value) && value >= 0 && value <= max);
  return (
    ok(usage.input, USAGE_RANGE.tokens) &&
    ok(usage.output, USAGE_RANGE.tokens) &&
    ok(usage.costUsd, USAGE_RANGE.costUsd) &&
    ok(usage.turns, USAGE_RANGE.turns)
  );
}

/** Input + output tokens. */
export function tokensOf(usage: TaskUsage): number {
  return usage.input + usage.output;
}

/** Two usages together (one attempt's after another's). */
export function addUsage(a: TaskUsage, b: TaskUsage): TaskUsage {
  const out: TaskUsage = { input: a.input + b.input, output: a.output + b.output };
  if (a.costUsd !== undefined || b.costUsd !== undefined) out.costUsd = (a.costUsd ?? 0) + (b.costUsd ?? 0);
  if (a.turns !== undefined || b.turns !== undefined) out.turns = (a.turns ?? 0) + (b.turns ?? 0);
  return out;
}

/** The later report of one run over the earlier: each figure the larger (a report never takes back spending). */
export function laterUsage(earlier: TaskUsage | undefined, later: TaskUsage): TaskUsage {
  if (!earlier) return later;
  const out: TaskUsage = { input: Math.max(earlier.input, later.input), output: Math.max(earlier.output, later.output) };
  const cost = maxDefined(earlier.costUsd, later.costUsd);
  const turns = maxDefined(earlier.turns, later.turns);
  if (cost !== undefined) out.costUsd = cost;
  if (turns !== undefined) out.turns = turns;
  return out;
}

/** The budget's fields of a spec or request (only those set). */
export function budgetOf(spec: TaskBudget): TaskBudget | undefined {
  const budget: TaskBudget = {};
  for (const key of BUDGET_KEYS) if (spec[key] !== undefined) budget[key] = spec[key];
  return Object.keys(budget).length > 0 ? budget : undefined;
}

/** Why `usage` is over `budget` ("used 150 tokens, over the budget of 120"), or undefined while it is within. */
export function overBudget(usage: TaskUsage, budget: TaskBudget): string | undefined {
  const tokens = tokensOf(usage);
  if (budget.maxTokens !== undefined && tokens > budget.maxTokens) return `used ${tokens} tokens, over the budget of ${budget.maxTokens}`;
  if (budget.maxCostUsd !== undefined && usage.costUsd !== undefined && usage.costUsd > budget.maxCostUsd)
    return `spent $${formatUsd(usage.costUsd)}, over the budget of $${formatUsd(budget.maxCostUsd)}`;
  if (budget.maxTurns !== undefined && usage.turns !== undefined && usage.turns > budget.maxTurns)
    return `took ${usage.turns} turns, over the budget of ${budget.maxTurns}`;
  return undefined;
}

/** Usage in one short line: "150 tokens · $0.0123". */
export function describeUsage(usage: TaskUsage): string {
  const parts = [`${tokensOf(usage)} tokens`];
  if (usage.costUsd !== undefined) parts.push(`$${formatUsd(usage.costUsd)}`);
  if (usage.turns !== undefined) parts.push(`${usage.turns} turns`);
  return parts.join(' · ');
}

/** A budget in one short line: "120 tokens · $0.5 · 10 turns". */
export function describeBudget(budget: TaskBudget): string {
  const parts: string[] = [];
  if (budget.maxTokens !== undefined) parts.push(`${budget.maxTokens} tokens`);
  if (budget.maxCostUsd !== undefined) parts.push(`$${formatUsd(budget.maxCostUsd)}`);
  if (budget.maxTurns !== undefined) parts.push(`${budget.maxTurns} turns`);
  return parts.join(' · ');
}

/**
 * What a task spent against its budget, in one short line, as the live views show it (`run`'s status
 * line, the panel's row): "150/200 tokens · $0.03/$0.5"; each limit after its figure, a figure the
 * budget caps shown from 0 before the first report; '' when there is neither usage nor a budget.
 */
export function describeSpend(usage: TaskUsage | undefined, budget: TaskBudget | undefined): string {
  if (!usage && !budget) return '';
  const of = (limit: number | undefined, shown: string) => (limit === undefined ? '' : `/${shown}`);
  const parts: string[] = [];
  const tokens = usage ? tokensOf(usage) : 0;
  if (usage || budget?.maxTokens !== undefined) parts.push(`${tokens}${of(budget?.maxTokens, String(budget?.maxTokens))} tokens`);
  if (usage?.costUsd !== undefined || budget?.maxCostUsd !== undefined) {
    const max = budget?.maxCostUsd;
    parts.push(`$${formatUsd(usage?.costUsd ?? 0)}${of(max, `$${formatUsd(max ?? 0)}`)}`);
  }
  if (usage?.turns !== undefined || budget?.maxTurns !== undefined) {
    parts.push(`${usage?.turns ?? 0}${of(budget?.maxTurns, String(budget?.maxTurns))} turns`);
  }
  return parts.join(' · ');
}

/** Dollars with up to four decimals, trailing zeros dropped. */
export function formatUsd(value: number): string {
  return String(Math.round(value * 10_000) / 10_000);
}

function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

/** Reads figures of a report, keeping the first figure it had to refuse. */
class FigureReader {
  refused: string | undefined;

  /** The first of `names` that is a number in `source`; a number out of 0…`max` (or not finite) is refused. */
  first(source: Record<string, unknown>, where: string, names: readonly string[], max: number, round = true): number | undefined {
    for (const name of names) {
      const value = source[name];
      if (typeof value !== 'number') continue;
      if (!Number.isFinite(value) || value < 0 || value > max) {
        this.refused ??= `${where}.${name} ${value} is out of range (0 to ${max})`;
        return undefined;
      }
      return round ? Math.round(value) : value;
    }
    return undefined;
  }
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
