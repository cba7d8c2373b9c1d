/**
 * Aggregates finished tasks into insights (model/insights.ts). Tasks are first folded into hourly
 * buckets (hour × agent × model × label): the buckets of tasks still in history carry their ids
 * (so a chart point can open them), those of tasks that left history are kept by ./rollup.ts. The
 * figures are then computed from buckets only, so the same code serves both, and the panel receives
 * a few hundred numbers however many tasks there are.
 *
 * Duration is the broker's own clock, start of the first attempt to the end (an agent's
 * `meta.duration_ms` may be missing or wrong). Percentiles are nearest-rank: the smallest value with
 * at least p % of the values at or below it.
 */
import path from 'node:path';
import { failureReasonOf } from '../../model/states.js';
import { isDemoTask, resultMetaOf, type TaskSnapshot } from '../../model/task.js';
import { reportedUsage, usageInRange } from '../../model/usage.js';
import { BRIDGE_GUARD_KEY, bridgeGuardOf, type BridgeGuardCounts } from '../../model/annotations.js';
import {
  APPROVAL_COUNTS,
  approvalsOf,
  OUTCOMES,
  type AbRow,
  type AgentApprovals,
  type ApprovalCounts,
  type Figures,
  type Insights,
  type InsightsQuery,
  type Outcome,
  type Series,
} from '../../model/insights.js';

export interface Bucket {
  hour: string;
  agent: string;
  model: string;
  label: string;
  counts: Partial<Record<Outcome, number>>;
  durations: number[];
  tokensIn: number;
  tokensOut: number;
  /** Ids of the tasks in it that are still in history. */
  ids?: string[];
  /** The scratch-path guard's counts of its bridged tasks (`meta.bridge_guard`), summed; absent when none. */
  guard?: Partial<BridgeGuardCounts>;
  /** Its ACP tasks' approvals (`meta.acp.approvals`), summed; absent when none. */
  approvals?: Partial<ApprovalCounts>;
}

export const NO_MODEL = '(none)';
const MAX_PICKED = 200;
const RUNTIMES = /^(node|nodejs|python3?|tsx|deno|bun|bash|sh|ruby|perl)(\.exe)?$/;

/** A runtime's options whose next argument is code to run: the agent is then named `node -e`, `python3 -c`. */
const INLINE_CODE = new Set(['-e', '--eval', '-p', '--print', '-c']);
/** A runtime's options whose next argument is their value, not the script (`node --import tsx agent.ts`). */
const TAKES_VALUE = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--env-file', '-W', '-X']);

/**
 * Which agent ran a task: its template, else its script (`node agent.mjs` → `agent.mjs`, `python3 -m
 * pkg` → `pkg`), else the runtime and its inline-code option (`node -e "…"` → `node -e`), else its command.
 */
export function agentOf(task: Pick<TaskSnapshot, 'command' | 'args' | 'tags'>): string {
  if (task.tags?.template) return task.tags.template;
  const command = path.basename(task.command);
  if (!RUNTIMES.test(command)) return command;
  for (let i = 0; i < task.args.length; i++) {
    const arg = task.args[i]!;
    if (INLINE_CODE.has(arg)) return `${command} ${arg}`;
    if (arg === '-m') return task.args[i + 1] ?? command;
    if (TAKES_VALUE.has(arg)) i++;
    else if (!arg.startsWith('-')) return path.basename(arg);
  }
  return command;
}

export function outcomeOf(task: Pick<TaskSnapshot, 'state' | 'reason'>): Outcome {
  return task.state === 'succeeded' ? 'success' : (failureReasonOf(task) ?? 'error');
}

const UTC_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** The hour a time falls in, as an ISO string. */
export function hourOf(iso: string): string {
  // The broker's own timestamps are UTC ISO strings: cut, do not parse (100,000 tasks per call).
  if (UTC_ISO.test(iso)) return `${iso.slice(0, 13)}:00:00.000Z`;
  const time = new Date(iso);
  time.setUTCMinutes(0, 0, 0);
  return time.toISOString();
}

function durationOf(task: TaskSnapshot): number | undefined {
  if (!task.startedAt || !task.endedAt) return undefined;
  const ms = Date.parse(task.endedAt) - Date.parse(task.startedAt);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** The task's tokens: what the broker recorded, else its final payload's report, read the one way (model/usage.ts). */
function tokensOf(task: TaskSnapshot): { input: number; output: number } {
  const recorded = task.usage ?? reportedUsage(resultMetaOf(task), task.result?.data);
  // A usage out of range in history written before such reports were refused counts for nothing (Y38).
  const usage = recorded && usageInRange(recorded) ? recorded : undefined;
  return { input: usage?.input ?? 0, output: usage?.output ?? 0 };
}

/**
 * Folds finished tasks into `into` (keyed by hour, agent, model and label); `withIds` keeps their ids.
 * Demo tasks (`serve --demo`) are not figures of the user's agents: they are left out.
 */
export function foldTasks(tasks: Iterable<TaskSnapshot>, into = new Map<string, Bucket>(), withIds = true): Map<string, Bucket> {
  for (const task of tasks) {
    if (!task.endedAt || isDemoTask(task)) continue;
    const modelUsed = resultMetaOf(task)?.model_used;
    const model = typeof modelUsed === 'string' ? modelUsed : NO_MODEL;
    const bucket = bucketFor(into, { hour: hourOf(task.endedAt), agent: agentOf(task), model, label: task.label });
    const outcome = outcomeOf(task);
    bucket.counts[outcome] = (bucket.counts[outcome] ?? 0) + 1;
    const duration = durationOf(task);
    if (duration !== undefined) bucket.durations.push(duration);
    const tokens = tokensOf(task);
    bucket.tokensIn += tokens.input;
    bucket.tokensOut += tokens.output;
    if (withIds) (bucket.ids ??= []).push(task.id);
    addGuard(bucket, bridgeGuardOf(task.annotations) ?? bridgeGuardOf(resultMetaOf(task)));
    addApprovals(bucket, approvalsOf(resultMetaOf(task)));
  }
  return into;
}

/** Adds `buckets` (e.g. read back from the rollup file) into `into`. */
export function mergeBuckets(buckets: Iterable<Bucket>, into: Map<string, Bucket>): Map<string, Bucket> {
  for (const source of buckets) {
    const bucket = bucketFor(into, source);
    for (const outcome of OUTCOMES) {
      const n = source.counts[outcome];
      if (n) bucket.counts[outcome] = (bucket.counts[outcome] ?? 0) + n;
    }
    for (const d of source.durations) bucket.durations.push(d);
    bucket.tokensIn += source.tokensIn;
    bucket.tokensOut += source.tokensOut;
    if (source.ids) (bucket.ids ??= []).push(...source.ids);
    // A saved bucket's counts (the rollup file), read the one way: only non-negative numbers.
    addGuard(bucket, bridgeGuardOf({ [BRIDGE_GUARD_KEY]: source.guard }));
    addApprovals(bucket, approvalsOf({ acp: { approvals: source.approvals } }));
  }
  return into;
}

/** Adds a task's (or a saved bucket's) approval counts into `bucket`'s. */
function addApprovals(bucket: Bucket, counts: Partial<ApprovalCounts> | undefined): void {
  if (!counts) return;
  const sum = (bucket.approvals ??= {});
  for (const key of APPROVAL_COUNTS) if (counts[key] !== undefined) sum[key] = (sum[key] ?? 0) + counts[key];
}

/** The approval counts of `buckets` per agent, agents sorted; undefined when no bucket has any. */
function approvalsByAgent(buckets: readonly Bucket[]): AgentApprovals[] | undefined {
  const byAgent = new Map<string, AgentApprovals>();
  for (const bucket of buckets) {
    if (!bucket.approvals) continue;
    const sum = byAgent.get(bucket.agent) ?? { agent: bucket.agent, asked: 0, allowed: 0, rejected: 0, unanswered: 0 };
    for (const key of APPROVAL_COUNTS) sum[key] += bucket.approvals[key] ?? 0;
    byAgent.set(bucket.agent, sum);
  }
  return byAgent.size > 0 ? [...byAgent.values()].sort((a, b) => (a.agent < b.agent ? -1 : 1)) : undefined;
}

/** Adds a task's (or a saved bucket's) guard counts into `bucket`'s. */
function addGuard(bucket: Bucket, counts: Partial<BridgeGuardCounts> | undefined): void {
  if (!counts) return;
  const sum = (bucket.guard ??= {});
  for (const [key, n] of Object.entries(counts) as [keyof BridgeGuardCounts, number][]) sum[key] = (sum[key] ?? 0) + n;
}

/** The guard counts of `buckets`, summed (every count, 0 when none); undefined when no bucket has any. */
function guardOf(buckets: readonly Bucket[]): BridgeGuardCounts | undefined {
  const withGuard = buckets.filter((bucket) => bucket.guard);
  if (withGuard.length === 0) return undefined;
  const total: BridgeGuardCounts = { violations: 0, corrections: 0, unknown_tools: 0, replays: 0 };
  for (const bucket of withGuard)
    for (const key of Object.keys(total) as (keyof BridgeGuardCounts)[]) total[key] += bucket.guard![key] ?? 0;
  return total;
}

function bucketFor(buckets: Map<string, Bucket>, key: Pick<Bucket, 'hour' | 'agent' | 'model' | 'label'>): Bucket {
  const name = `${key.hour}\u0000${key.agent}\u0000${key.model}\u0000${key.label}`;
  let bucket = buckets.get(name);
  if (!bucket) {
    bucket = { hour: key.hour, agent: key.agent, model: key.model, label: key.label, counts: {}, durations: [], tokensIn: 0, tokensOut: 0 };
    buckets.set(name, bucket);
  }
  return bucket;
}

/** Nearest-rank percentile of ascending `sorted`; null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

/** The figures of a set of buckets. */
export function figuresOf(key: string, buckets: readonly Bucket[]): Figures {
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const durations: number[] = [];
  let tokensIn = 0;
  let tokensOut = 0;
  for (const bucket of buckets) {
    for (const outcome of OUTCOMES) outcomes[outcome] += bucket.counts[outcome] ?? 0;
    for (const d of bucket.durations) durations.push(d);
    tokensIn += bucket.tokensIn;
    tokensOut += bucket.tokensOut;
  }
  durations.sort((a, b) => a - b);
  const count = OUTCOMES.reduce((sum, o) => sum + outcomes[o], 0);
  return {
    key,
    count,
    outcomes,
    successRate: count === 0 ? 0 : outcomes.success / count,
    p50: percentile(durations, 50),
    p95: percentile(durations, 95),
    p99: percentile(durations, 99),
    tokensIn,
    tokensOut,
    tokensPerTask: count === 0 ? 0 : (tokensIn + tokensOut) / count,
  };
}

function groupBy<K extends string>(buckets: readonly Bucket[], keyOf: (bucket: Bucket) => K): Map<K, Bucket[]> {
  const groups = new Map<K, Bucket[]>();
  for (const bucket of buckets) {
    const key = keyOf(bucket);
    const list = groups.get(key);
    if (list) list.push(bucket);
    else groups.set(key, [bucket]);
  }
  return groups;
}

const byCountThenKey = (a: Figures, b: Figures): number => b.count - a.count || (a.key < b.key ? -1 : 1);

function matches(bucket: Bucket, query: InsightsQuery): boolean {
  if (query.agent !== undefined && bucket.agent !== query.agent) return false;
  if (query.model !== undefined && bucket.model !== query.model) return false;
  // A bucket is an hour: it is in the range when its hour overlaps it.
  if (query.since !== undefined && bucket.hour < hourOf(query.since)) return false;
  if (query.until !== undefined && bucket.hour > query.until) return false;
  return true;
}

/** The insights of `all` buckets for `query`. */
export function computeInsights(all: Iterable<Bucket>, query: InsightsQuery = {}, archived = 0): Insights {
  const everything = [...all];
  const buckets = everything.filter((bucket) => matches(bucket, query));
  const by = query.by ?? 'agent';
  const keyOf = (bucket: Bucket): string => (by === 'agent' ? bucket.agent : bucket.model);
  const hours = [...new Set(buckets.map((b) => b.hour))].sort();
  const groups = [...groupBy(buckets, keyOf)].map(([key, list]) => figuresOf(key, list)).sort(byCountThenKey);
  const series = groups.map((group) =>
    seriesOf(
      group.key,
      buckets.filter((b) => keyOf(b) === group.key),
      hours,
    ),
  );
  const agentSeries = [...groupBy(buckets, (b) => b.agent)].map(([agent, list]) => seriesOf(agent, list, hours));
  agentSeries.sort((a, b) => (a.key < b.key ? -1 : 1));
  const insights: Insights = {
    query,
    by,
    total: figuresOf('all', buckets),
    groups,
    agents: [...new Set(everything.map((b) => b.agent))].sort(),
    models: [...new Set(everything.map((b) => b.model))].sort(),
    hours,
    series,
    heatmap: { agents: agentSeries.map((s) => s.key), p95: agentSeries.map((s) => s.p95) },
    ab: abRows(buckets),
    archived,
  };
  const guard = guardOf(buckets);
  if (guard) insights.bridgeGuard = guard;
  const approvals = approvalsByAgent(buckets);
  if (approvals) insights.approvals = approvals;
  if (query.pick) insights.taskIds = picked(buckets, query.pick, keyOf);
  return insights;
}

function seriesOf(key: string, buckets: readonly Bucket[], hours: readonly string[]): Series {
  const perHour = groupBy(buckets, (b) => b.hour);
  const series: Series = { key, count: [], p50: [], p95: [], tokensIn: [], tokensOut: [] };
  for (const hour of hours) {
    const figures = figuresOf(hour, perHour.get(hour) ?? []);
    series.count.push(figures.count);
    series.p50.push(figures.p50);
    series.p95.push(figures.p95);
    series.tokensIn.push(figures.tokensIn);
    series.tokensOut.push(figures.tokensOut);
  }
  return series;
}

/** A/B: for each label run with more than one model, the models side by side (else, more than one agent: the agents). */
function abRows(buckets: readonly Bucket[]): AbRow[] {
  const rows: AbRow[] = [];
  for (const [label, list] of [...groupBy(buckets, (b) => b.label)].sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const kind of ['model', 'agent'] as const) {
      // A run that reported no model (a crash before it said) is no model variant.
      const variants = groupBy(kind === 'model' ? list.filter((b) => b.model !== NO_MODEL) : list, (b) => b[kind]);
      if (variants.size < 2) continue;
      const figures = [...variants].map(([key, group]) => figuresOf(key, group)).sort(byCountThenKey);
      rows.push(...figures.map((f) => ({ label, kind, figures: f })));
      break;
    }
  }
  return rows;
}

function picked(buckets: readonly Bucket[], pick: NonNullable<InsightsQuery['pick']>, keyOf: (b: Bucket) => string): string[] {
  const ids: string[] = [];
  for (const bucket of buckets) {
    if (bucket.hour !== pick.hour || (pick.key !== undefined && keyOf(bucket) !== pick.key)) continue;
    ids.push(...(bucket.ids ?? []));
  }
  // uuid v7 ids sort by creation time.
  return ids.sort().reverse().slice(0, MAX_PICKED);
}
