/**
 * Approvals: every `session/request_permission` (and every file write no approval covers) goes through
 * the policy for its tool kind: `allow` and `reject` decide at once; `ask` becomes a Backchannel
 * question carrying the agent's own options and the tool call (docs/acp.md). Silence never approves:
 * an unanswered question picks the reject option and is recorded `unanswered`. Every decision is kept
 * in the work's `approvals`; an allowed tool call's paths are remembered so its write is not asked twice.
 */
import path from 'node:path';
import type { RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import type { ApprovalContext, ApprovalOption } from '../agent-runtime/index.js';
import type { Asker, AskResult } from './asker.js';
import { toolKind, type AcpSettings, type ToolKind } from './settings.js';
import { commandOf, locationPaths, type ApprovalRecord, type Work } from './work.js';
import { isBridgeToolCall } from './bridge-tools.js';

/** The protocol's bound on an approval's options. */
const MAX_OPTIONS = 16;
/** An option's name, id or kind as shown and kept; a question's target (paths or command) as shown. */
const MAX_LABEL = 200;
const MAX_TARGET = 500;

/** The options Backchannel offers for a write or a command no tool call's approval covers. */
const ACT_OPTIONS: ApprovalOption[] = [
  { option_id: 'allow', name: 'allow', kind: 'allow_once' },
  { option_id: 'reject', name: 'reject', kind: 'reject_once' },
];

type Decision = { option: ApprovalOption | undefined; record: Omit<ApprovalRecord, 'at'> };

const isAllow = (option: ApprovalOption | undefined) => option !== undefined && option.kind.startsWith('allow');

/** The option an answer names: its name (any case), its number (1-based), its id or its kind. */
export function pickOption(options: readonly ApprovalOption[], answer: string): ApprovalOption | undefined {
  const wanted = answer.trim().toLowerCase();
  const byNumber = /^\d+$/.test(wanted) ? options[Number(wanted) - 1] : undefined;
  return (
    byNumber ??
    options.find((o) => o.name.trim().toLowerCase() === wanted) ??
    options.find((o) => o.option_id.toLowerCase() === wanted) ??
    options.find((o) => o.kind === wanted)
  );
}

function optionOfKind(options: readonly ApprovalOption[], allow: boolean): ApprovalOption | undefined {
  const kinds = allow ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of kinds) {
    const found = options.find((o) => o.kind === kind);
    if (found) return found;
  }
  return undefined;
}

export class Approvals {
  /** Absolute paths of tool calls the person (or the policy) allowed: their writes are not asked again. */
  private readonly approvedPaths = new Set<string>();
  /** Command lines of allowed execute tool calls: a terminal running one is not asked again. */
  private readonly approvedCommands = new Set<string>();

  constructor(
    private readonly asker: Asker,
    private readonly settings: AcpSettings,
    private readonly work: Work,
    private readonly cwd: string,
  ) {}

  /** Aborted when the run cancels the turn (ACP: pending permission requests are then answered `cancelled`). */
  private turn = new AbortController();

  /** The turn is being cancelled: questions for it waiting (or queued) give up, and answer `cancelled`. */
  cancelTurn(): void {
    this.turn.abort();
    this.turn = new AbortController();
  }

  /** Answers a permission request: the option chosen, or `cancelled` when the turn is being cancelled. */
  async permission(request: RequestPermissionRequest, requestSignal: AbortSignal): Promise<RequestPermissionResponse> {
    const signal = AbortSignal.any([requestSignal, this.turn.signal]);
    const call = request.toolCall;
    const announced = this.work.toolCalls.get(call.toolCallId);
    const kind = toolKind(call.kind ?? announced?.kind);
    const title = (call.title ?? announced?.title ?? call.toolCallId).slice(0, 500);
    const locations = call.locations ? locationPaths(call.locations) : (announced?.locations ?? []);
    const command = commandOf(call.rawInput) ?? announced?.command;
    const options = request.options
      .slice(0, MAX_OPTIONS)
      .map((o) => ({ option_id: o.optionId.slice(0, MAX_LABEL), name: o.name.slice(0, MAX_LABEL), kind: o.kind.slice(0, MAX_LABEL) }));
    const approval: ApprovalContext = {
      tool_call_id: call.toolCallId,
      kind,
      title,
      ...(locations.length > 0 ? { locations } : {}),
      ...(kind === 'execute' && command !== undefined ? { command } : {}),
      options,
      ...(announced ? {} : { unannounced: true }),
    };
    const decision = await this.decide(kind, approval, signal);
    if (!decision) return { outcome: { outcome: 'cancelled' } };
    this.keep(decision.record);
    if (isAllow(decision.option)) {
      for (const p of locations) this.approvedPaths.add(path.resolve(this.cwd, p));
      if (command !== undefined) this.approvedCommands.add(command);
    }
    return decision.option
      ? { outcome: { outcome: 'selected', optionId: decision.option.option_id } }
      : { outcome: { outcome: 'cancelled' } };
  }

  /** Whether a write to `absolute` may go ahead: covered by an allowed tool call, or the `edit` policy's verdict. */
  async mayWrite(absolute: string, signal: AbortSignal): Promise<boolean> {
    if (this.approvedPaths.has(absolute)) return true;
    const shown = path.relative(this.cwd, absolute) || '.';
    const allowed = await this.mayAct('edit', { tool_call_id: `write:${shown}`, title: `write ${shown}`, locations: [absolute] }, signal);
    if (allowed) this.approvedPaths.add(absolute);
    return allowed;
  }

  /** Whether a terminal may run `command`: an allowed execute tool call's command, or the `execute` policy's verdict. */
  async mayRun(command: string, signal: AbortSignal): Promise<boolean> {
    if (this.approvedCommands.has(command)) return true;
    return this.mayAct(
      'execute',
      { tool_call_id: `run:${command.slice(0, 100)}`, title: 'run a command', command: command.slice(0, 2000) },
      signal,
    );
  }

  private async mayAct(kind: ToolKind, what: Omit<ApprovalContext, 'kind' | 'options'>, signal: AbortSignal): Promise<boolean> {
    const approval: ApprovalContext = { ...what, kind, options: ACT_OPTIONS, unannounced: true };
    const decision = await this.decide(kind, approval, signal);
    if (!decision) return false;
    this.keep(decision.record);
    return isAllow(decision.option);
  }

  private keep(record: Omit<ApprovalRecord, 'at'>): void {
    this.work.approvals.push({ ...record, at: new Date().toISOString() });
  }

  /** The policy's decision, or the person's; undefined when the turn was cancelled meanwhile. */
  private async decide(kind: ToolKind, approval: ApprovalContext, signal: AbortSignal): Promise<Decision | undefined> {
    // Bridge mode: the caller's own tools are the caller's to allow (./bridge-tools.ts).
    const policy = isBridgeToolCall(approval.title, kind) ? 'allow' : this.settings.approvals[kind];
    const base = {
      tool_call_id: approval.tool_call_id,
      kind,
      title: approval.title,
      ...(approval.unannounced ? { unannounced: true as const } : {}),
    };
    const record = (option: ApprovalOption | undefined, by: ApprovalRecord['by'], unanswered = false): Decision => ({
      option,
      record: {
        ...base,
        option_id: option?.option_id ?? null,
        decision: unanswered ? 'unanswered' : isAllow(option) ? 'allowed' : 'rejected',
        by,
      },
    });
    if (policy !== 'ask') return record(optionOfKind(approval.options, policy === 'allow'), 'policy');
    const result = await this.ask(approval, signal);
    if ('cancelled' in result) return undefined;
    if ('unanswered' in result) return record(optionOfKind(approval.options, false), 'timeout', true);
    // An answer that names no option approves nothing.
    return record(pickOption(approval.options, result.answer) ?? optionOfKind(approval.options, false), 'answer');
  }

  private async ask(approval: ApprovalContext, signal: AbortSignal): Promise<AskResult> {
    const target = (approval.command ?? approval.locations?.join(', ') ?? '').slice(0, MAX_TARGET);
    const question = `needs approval: ${approval.title}${target && !approval.title.includes(target) ? ` ${target}` : ''}`;
    return this.asker.ask(question, { choices: approval.options.map((o) => o.name), approval }, signal);
  }
}
