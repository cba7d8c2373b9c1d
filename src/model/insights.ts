/**
 * Insights: how fast, how reliable and how costly each sub-agent and model is, aggregated from the
 * history journal by the broker (broker/history/insights.ts) and shown by the panel and
 * `backchannel stats`. Plain JSON; the front-ends only draw it.
 */
import type { BridgeGuardCounts } from './annotations.js';

/** How a finished task ended: `success`, or its failure reason. */
export const OUTCOMES = [
  'success',
  'error',
  'timeout',
  'stalled',
  'crashed',
  'cancelled',
  'protocol',
  'refused',
  'budget_exceeded',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** What to aggregate. Times are ISO 8601; a task counts by when it ended. */
export interface InsightsQuery {
  since?: string;
  until?: string;
  /** Only this agent (see `agentOf`) / this model (`meta.model_used`, or `(none)`). */
  agent?: string;
  model?: string;
  /** What `groups` and `series` are keyed by. @default 'agent' */
  by?: 'agent' | 'model';
  /** Also list the ids of the tasks behind one point: those of this hour (and group key, if given). */
  pick?: { hour: string; key?: string };
}

/** The figures of one set of finished tasks. Durations are milliseconds, `null` when there is none. */
export interface Figures {
  key: string;
  count: number;
  outcomes: Record<Outcome, number>;
  /** Successes / count, 0–1. */
  successRate: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  tokensIn: number;
  tokensOut: number;
  /** (tokensIn + tokensOut) / count. */
  tokensPerTask: number;
}

/** One group's figures per hour, aligned with `Insights.hours`. */
export interface Series {
  key: string;
  count: number[];
  p50: (number | null)[];
  p95: (number | null)[];
  tokensIn: number[];
  tokensOut: number[];
}

/** One variant (a model, or an agent) of the tasks that share a label. */
export interface AbRow {
  label: string;
  kind: 'model' | 'agent';
  figures: Figures;
}

export interface Insights {
  query: InsightsQuery;
  by: 'agent' | 'model';
  total: Figures;
  /** Per agent or per model (`by`), most tasks first. */
  groups: Figures[];
  /** Every agent and model seen (for filters), sorted. */
  agents: string[];
  models: string[];
  /** The hours (ISO, `…T13:00:00.000Z`) that have tasks, oldest first. */
  hours: string[];
  /** Per group, per hour. */
  series: Series[];
  /** p95 duration by agent (rows) and hour (columns): the design's latency heatmap. */
  heatmap: { agents: string[]; p95: (number | null)[][] };
  /** Labels run by more than one model (or agent), each variant side by side. */
  ab: AbRow[];
  /** The token budget the broker runs with, when one is set. */
  budget?: { capacity: number; refillPerSecond: number };
  /** With `query.pick`: the ids of the tasks behind that point still in history (newest first, at most 200). */
  taskIds?: string[];
  /** Tasks counted that left history (folded into the kept aggregates). */
  archived: number;
  /**
   * The gateway's scratch-path guard (docs/gateway.md, "Bridge mode"): its counts summed over the
   * query's tasks (each task's `meta.bridge_guard`); absent when no task has any.
   */
  bridgeGuard?: BridgeGuardCounts;
  /**
   * ACP tasks' approvals per agent (docs/acp.md): permission requests asked of a person, and how each
   * was decided; summed from each task's `meta.acp.approvals`. Absent when no task has any.
   */
  approvals?: AgentApprovals[];
}

/** What happened to an ACP agent's permission requests that were asked (`unanswered`: timed out, rejected). */
export interface ApprovalCounts {
  asked: number;
  allowed: number;
  rejected: number;
  unanswered: number;
}
export const APPROVAL_COUNTS = ['asked', 'allowed', 'rejected', 'unanswered'] as const satisfies readonly (keyof ApprovalCounts)[];

export interface AgentApprovals extends ApprovalCounts {
  agent: string;
}

/** The approval counts a task's meta holds (`meta.acp.approvals`), only non-negative finite numbers. */
export function approvalsOf(meta: Record<string, unknown> | undefined): Partial<ApprovalCounts> | undefined {
  const acp = meta?.acp;
  const counts = typeof acp === 'object' && acp !== null ? (acp as Record<string, unknown>).approvals : undefined;
  if (typeof counts !== 'object' || counts === null) return undefined;
  const out: Partial<ApprovalCounts> = {};
  for (const key of APPROVAL_COUNTS) {
    const n = (counts as Record<string, unknown>)[key];
    if (typeof n === 'number' && Number.isFinite(n) && n >= 0) out[key] = n;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
