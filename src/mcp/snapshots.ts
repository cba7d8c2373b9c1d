/**
 * What an MCP client sees of a Backchannel task: a compact summary for the tools, and the mapping
 * onto MCP Tasks statuses (partial → working with a status message, ask → input_required, success →
 * completed, error/timeout/crash → failed, cancelled → cancelled).
 */
import type { Task as McpTask } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BackchannelBridge } from '../client/index.js';
import { describePartial, failureOf, partialResultOf } from '../model/states.js';
import { questionContext } from '../model/questions.js';
import { waitingForTools } from '../model/tools.js';
import { isFinished, type PartialResult, type PendingQuestion, type TaskSnapshot } from '../model/task.js';
import { tokensOf, type TaskBudget, type TaskUsage } from '../model/usage.js';

/** How often an MCP client should poll a task (`pollInterval`). */
export const POLL_INTERVAL_MS = 500;

export interface TaskSummary {
  task_id: string;
  label: string;
  state: TaskSnapshot['state'];
  done: boolean;
  progress?: number;
  last_partial?: unknown;
  /** A pending question; a coding task's names where it stands (`worktree`: its branch and the files changed so far). */
  question?: { ask_id: string; question: string; choices?: string[]; worktree?: { branch: string; files: string[] } };
  /** `waiting for <tool>` while the task waits on its caller's tools (docs/protocol.md §6.1). */
  waiting?: string;
  result?: unknown;
  failure?: { reason: string; message: string; stderr_tail?: string };
  /** What a task the broker stopped (deadline, watchdog, budget, cancel) had produced: kept with its failure. */
  partial_result?: PartialResult;
  /** What the agent reported spending so far (`tokens` = input + output), live while it runs. */
  usage?: { input_tokens: number; output_tokens: number; tokens: number; cost_usd?: number; turns?: number };
  /** The task's budget, when it has one. */
  budget?: { max_tokens?: number; max_cost_usd?: number; max_turns?: number };
  /** What the task's caller annotated (`TaskRun.annotate`; the gateway's `bridge_guard` counts), also in its final meta. */
  annotations?: Record<string, unknown>;
  created_at: string;
  ended_at?: string;
}

export function summarize(task: TaskSnapshot): TaskSummary {
  const summary: TaskSummary = {
    task_id: task.id,
    label: task.label,
    state: task.state,
    done: isFinished(task.state),
    created_at: task.createdAt,
  };
  if (task.progress !== undefined) summary.progress = task.progress;
  if (task.lastPartial !== undefined && !summary.done) summary.last_partial = task.lastPartial;
  if (task.pendingQuestion) {
    const { askId, question, choices, worktree } = task.pendingQuestion;
    summary.question = { ask_id: askId, question, ...(choices ? { choices } : {}), ...(worktree ? { worktree } : {}) };
  }
  const waiting = waitingForTools(task.pendingToolCalls);
  if (waiting) summary.waiting = waiting;
  if (task.state === 'succeeded') summary.result = task.result?.data ?? null;
  else if (summary.done) {
    const { reason, message } = failureOf(task)!;
    summary.failure = { reason, message };
    if (task.stderrTail) summary.failure.stderr_tail = task.stderrTail;
    if (task.result?.data !== undefined) summary.result = task.result.data;
    const partial = partialResultOf(task);
    if (partial) summary.partial_result = partial;
  }
  if (task.usage) summary.usage = usageSummary(task.usage);
  if (task.budget) summary.budget = budgetSummary(task.budget);
  if (task.annotations) summary.annotations = task.annotations;
  if (task.endedAt) summary.ended_at = task.endedAt;
  return summary;
}

function usageSummary(usage: TaskUsage): NonNullable<TaskSummary['usage']> {
  const out: NonNullable<TaskSummary['usage']> = { input_tokens: usage.input, output_tokens: usage.output, tokens: tokensOf(usage) };
  if (usage.costUsd !== undefined) out.cost_usd = usage.costUsd;
  if (usage.turns !== undefined) out.turns = usage.turns;
  return out;
}

function budgetSummary(budget: TaskBudget): NonNullable<TaskSummary['budget']> {
  const out: NonNullable<TaskSummary['budget']> = {};
  if (budget.maxTokens !== undefined) out.max_tokens = budget.maxTokens;
  if (budget.maxCostUsd !== undefined) out.max_cost_usd = budget.maxCostUsd;
  if (budget.maxTurns !== undefined) out.max_turns = budget.maxTurns;
  return out;
}

/**
 * The task with its whole final payload: a big result, of which snapshots carry only a summary, is
 * fetched from the broker (tools and MCP Tasks return results whole).
 */
export async function withWholeResult(bridge: Pick<BackchannelBridge, 'taskResult'>, task: TaskSnapshot): Promise<TaskSnapshot> {
  if (task.result || !task.resultSummary) return task;
  const result = await bridge.taskResult(task.id);
  return result ? { ...task, result } : task;
}

/** A tool result carrying `value` as JSON text and as structured content. */
export function jsonResult(value: object, isError = false): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent: value as Record<string, unknown>,
    isError,
  };
}

/** The final tool result of a task run through MCP Tasks (or waited for): its payload's data, or the failure. */
export function finalResult(task: TaskSnapshot): CallToolResult {
  return jsonResult(summarize(task), task.state !== 'succeeded');
}

export function statusMessage(task: TaskSnapshot): string | undefined {
  if (task.pendingQuestion) return withContext(`The sub-agent asks: ${task.pendingQuestion.question}`, task.pendingQuestion);
  if (isFinished(task.state)) return task.message;
  if (task.state === 'queued') return 'queued';
  const waiting = waitingForTools(task.pendingToolCalls);
  if (waiting) return waiting;
  const partial = describePartial(task.lastPartial);
  const progress = task.progress === undefined ? '' : `${Math.round(task.progress)}%`;
  return [progress, partial].filter(Boolean).join(' · ') || task.state;
}

/** `text`, then where a coding task stands when it asks (its branch and the files it changed so far). */
export function withContext(text: string, question: PendingQuestion): string {
  const context = questionContext(question);
  return context ? `${text} (${context})` : text;
}

/** The MCP Tasks status of a Backchannel task (the table in docs/mcp.md). */
export function mcpStatus(task: TaskSnapshot): McpTask['status'] {
  if (task.pendingQuestion) return 'input_required';
  if (task.state === 'succeeded') return 'completed';
  if (task.state === 'cancelled') return 'cancelled';
  return isFinished(task.state) ? 'failed' : 'working';
}

/**
 * When `task` last changed as the snapshot alone tells: its end, its pending question, its (latest) start, its creation.
 * A status change the snapshot has no time for (an answered question) is stamped by the task store's clock.
 */
export function snapshotUpdatedAt(task: TaskSnapshot): string {
  return task.endedAt ?? task.pendingQuestion?.askedAt ?? task.startedAt ?? task.createdAt;
}

/** `ttl`: the retention the client asked for (ms), or null — unlimited by time: the hub's history keeps the task. */
export function toMcpTask(
  task: TaskSnapshot,
  { ttl, lastUpdatedAt, status = mcpStatus(task) }: { ttl: number | null; lastUpdatedAt: string; status?: McpTask['status'] },
): McpTask {
  const message = status === 'cancelled' && !isFinished(task.state) ? 'cancelling' : statusMessage(task);
  return {
    taskId: task.id,
    status,
    ...(message ? { statusMessage: message } : {}),
    createdAt: task.createdAt,
    lastUpdatedAt,
    ttl,
    pollInterval: POLL_INTERVAL_MS,
  };
}
