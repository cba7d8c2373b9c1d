/**
 * The work an ACP run has produced so far, and how each `session/update` maps onto it: message and
 * thought chunks accumulate (bounded), tool calls become the task's step text, a plan its progress,
 * usage its live figures; unknown update kinds are ignored and counted. Every payload the adapter
 * sends, success or failure, carries this work in its `data`.
 */

/** The final message kept in `data.text`; beyond it the start is kept and `text_truncated` set. */
export const MAX_TEXT_CHARS = 1024 * 1024;
const MAX_THOUGHT_CHARS = 256 * 1024;
/** Tool calls kept in the result (a flood of them keeps the first ones). */
const MAX_TOOL_CALLS = 500;
const MAX_LOCATIONS = 20;
/** Longer paths are not real ones (Linux's PATH_MAX): dropped. */
const MAX_PATH = 4096;
const MAX_PLAN_ENTRIES = 200;
const MAX_REFUSALS = 100;

/** Update kinds ACP v1 defines that the task has no place for: ignored, not counted as unknown. */
const QUIET_KINDS = new Set([
  'user_message_chunk',
  'available_commands_update',
  'current_mode_update',
  'config_option_update',
  'session_info_update',
  'notice',
  'compaction_update',
  'compaction_summary_chunk',
]);

export interface ToolCallView {
  id: string;
  kind: string;
  title: string;
  status: string;
  locations: string[];
  command?: string;
}

export interface PlanEntryView {
  content: string;
  status: string;
}

export interface ApprovalRecord {
  tool_call_id: string;
  kind: string;
  title: string;
  option_id: string | null;
  decision: 'allowed' | 'rejected' | 'unanswered';
  by: 'policy' | 'answer' | 'timeout';
  at: string;
  unannounced?: true;
}

/** What an update changed: nothing the task shows, what it shows (coalesced), or its usage (sent at once). */
export type UpdateEffect = 'none' | 'shown' | 'usage';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;

/** The paths of a tool call's `locations` (strings only, bounded). */
export function locationPaths(locations: unknown): string[] {
  if (!Array.isArray(locations)) return [];
  return locations
    .map((l) => (isObject(l) ? str(l.path) : undefined))
    .filter((p): p is string => p !== undefined && p.length <= MAX_PATH)
    .slice(0, MAX_LOCATIONS);
}

/** An execute tool call's command line, from its raw input (`command` as a string or an argv array). */
export function commandOf(rawInput: unknown): string | undefined {
  if (!isObject(rawInput)) return undefined;
  const command = rawInput.command ?? rawInput.cmd;
  if (typeof command === 'string') return command.slice(0, 2000);
  if (Array.isArray(command) && command.every((c) => typeof c === 'string')) return command.join(' ').slice(0, 2000);
  return undefined;
}

export class Work {
  text = '';
  textTruncated = false;
  thoughts = '';
  readonly toolCalls = new Map<string, ToolCallView>();
  plan: PlanEntryView[] = [];
  /** The tool call the agent touched last: the task's step text. */
  step: string | undefined;
  progress: number | undefined;
  ignoredUpdates = 0;
  costUsd: number | undefined;
  readonly tokens = { input: 0, output: 0 };
  context: { used: number; size: number } | undefined;
  readonly filesWritten = new Set<string>();
  readonly approvals: ApprovalRecord[] = [];
  readonly refusals: string[] = [];
  /** Lines from the agent that were not JSON-RPC messages (refused, the run went on). */
  malformedMessages = 0;
  /** While a loaded session replays its history, its updates are not this run's work. */
  replaying = false;

  /** Applies one `session/update` (any shape: nothing an agent sends is trusted). */
  apply(update: unknown): UpdateEffect {
    if (this.replaying) return 'none';
    const kind = isObject(update) ? str(update.sessionUpdate) : undefined;
    if (!isObject(update) || kind === undefined) return this.ignore();
    switch (kind) {
      case 'agent_message_chunk':
        return this.chunk(update, 'text');
      case 'agent_thought_chunk':
        return this.chunk(update, 'thoughts');
      case 'tool_call':
      case 'tool_call_update':
        return this.toolCall(update);
      case 'plan':
        return this.applyPlan(update.entries);
      case 'usage_update':
        return this.usage(update);
      default:
        return QUIET_KINDS.has(kind) ? 'none' : this.ignore();
    }
  }

  private ignore(): UpdateEffect {
    this.ignoredUpdates++;
    return 'none';
  }

  private chunk(update: Record<string, unknown>, into: 'text' | 'thoughts'): UpdateEffect {
    const content = update.content;
    const text = isObject(content) && content.type === 'text' ? str(content.text) : undefined;
    if (text === undefined) return this.ignore();
    if (into === 'thoughts') {
      if (this.thoughts.length < MAX_THOUGHT_CHARS) this.thoughts += text.slice(0, MAX_THOUGHT_CHARS - this.thoughts.length);
      return 'shown';
    }
    this.appendText(text);
    return 'shown';
  }

  appendText(text: string): void {
    const room = MAX_TEXT_CHARS - this.text.length;
    if (text.length > room) this.textTruncated = true;
    if (room > 0) this.text += text.slice(0, room);
  }

  private toolCall(update: Record<string, unknown>): UpdateEffect {
    const id = str(update.toolCallId);
    if (id === undefined) return this.ignore();
    let call = this.toolCalls.get(id);
    if (!call) {
      if (this.toolCalls.size >= MAX_TOOL_CALLS) return 'none';
      call = { id, kind: 'other', title: id, status: 'pending', locations: [] };
      this.toolCalls.set(id, call);
    }
    call.kind = str(update.kind) ?? call.kind;
    call.title = (str(update.title) ?? call.title).slice(0, 500);
    call.status = str(update.status) ?? call.status;
    if (Array.isArray(update.locations)) call.locations = locationPaths(update.locations);
    const command = commandOf(update.rawInput);
    if (command !== undefined) call.command = command;
    this.step = call.title;
    return 'shown';
  }

  private applyPlan(entries: unknown): UpdateEffect {
    if (!Array.isArray(entries)) return this.ignore();
    this.plan = entries
      .slice(0, MAX_PLAN_ENTRIES)
      .filter(isObject)
      .map((e) => ({ content: (str(e.content) ?? '').slice(0, 500), status: str(e.status) ?? 'pending' }));
    const done = this.plan.filter((e) => e.status === 'completed').length;
    this.progress = this.plan.length === 0 ? undefined : Math.round((done / this.plan.length) * 100);
    return 'shown';
  }

  private usage(update: Record<string, unknown>): UpdateEffect {
    const used = count(update.used);
    const size = count(update.size);
    if (used !== undefined && size !== undefined) this.context = { used, size };
    const cost = update.cost;
    if (isObject(cost) && count(cost.amount) !== undefined && (cost.currency === undefined || cost.currency === 'USD')) {
      this.costUsd = count(cost.amount);
    }
    return 'usage';
  }

  /** Records a refusal (bounded: a flood of them keeps the first ones and the count). */
  refuse(message: string): void {
    if (this.refusals.length < MAX_REFUSALS) this.refusals.push(message.slice(0, 500));
  }

  /** A prompt turn's `usage` (ACP's unstable PromptResponse field, read when an agent sends it): added to the run's. */
  addTurnUsage(usage: unknown): boolean {
    if (!isObject(usage)) return false;
    const input = count(usage.inputTokens);
    const output = count(usage.outputTokens);
    if (input === undefined && output === undefined) return false;
    this.tokens.input += input ?? 0;
    this.tokens.output += output ?? 0;
    return true;
  }

  /** The usage as the protocol's meta reads it (the run's total so far). */
  usageMeta(): Record<string, unknown> {
    return { token_usage: { ...this.tokens }, ...(this.costUsd !== undefined ? { cost_usd: this.costUsd } : {}) };
  }

  /** What a partial shows: the step, progress, the plan, the last tool calls, the message's end. */
  partialData(): Record<string, unknown> {
    return {
      ...(this.step !== undefined ? { step: this.step } : {}),
      ...(this.progress !== undefined ? { progress: this.progress } : {}),
      ...(this.plan.length > 0 ? { plan: this.plan } : {}),
      tool_calls: [...this.toolCalls.values()].slice(-10),
      text: this.text.slice(-4096),
    };
  }

  /** The work so far, as every final payload's `data` carries it. */
  data(): Record<string, unknown> {
    return {
      text: this.text,
      ...(this.textTruncated ? { text_truncated: true } : {}),
      ...(this.thoughts ? { thoughts: this.thoughts } : {}),
      tool_calls: [...this.toolCalls.values()],
      plan: this.plan,
      approvals: this.approvals,
      files_written: [...this.filesWritten],
      ...(this.refusals.length > 0 ? { refusals: this.refusals } : {}),
    };
  }

  approvalCounts(): { asked: number; allowed: number; rejected: number; unanswered: number } {
    const by = (d: ApprovalRecord['decision']) => this.approvals.filter((a) => a.decision === d).length;
    return {
      asked: this.approvals.filter((a) => a.by !== 'policy').length,
      allowed: by('allowed'),
      rejected: by('rejected'),
      unanswered: by('unanswered'),
    };
  }
}
