/**
 * One bridged run (docs/gateway.md, "Bridge mode"): one agent process and one task for a whole
 * logical turn, across the several HTTP requests of its tool round trips.
 *
 * - **Offer**: the task is started with the client's tools (`TaskSpec.tools`).
 * - **Suspend**: the agent's tool calls are written to the current response as they come (the
 *   API's tool-call shape); once the step has been quiet for {@link STEP_GATHER_MS} the response
 *   ends with the API's tool-use stop, and the run waits, its agent alive.
 * - **Continue**: the client's next request carries the results; `continueWith` answers the pending
 *   calls (`TaskRun.answerToolCall`) and the run streams on into that request's response.
 * - A call to a tool the client did not offer, and one the scratch-path guard stops, never reach
 *   the client: the agent gets a corrective error at once.
 * - This run's guard counts (and its calls to tools not offered) go into its task's meta
 *   (`meta.bridge_guard`, `TaskRun.annotate`) before the agent gets its corrective result, so the
 *   counts are written before the task can end; `stats` sums them.
 * - A suspended run nobody continues within `idleMs` is cancelled, and so is one still waiting when
 *   the request deadline comes (`request_timeout_ms`, said as the client's tool results not sent in
 *   time: Y4); the calls it waited on reach `onEnd` (`unanswered`), so the client's late results get
 *   a clear error. A response whose client left cancels the run; every end reaches `onEnd` once.
 * - A response whose request forced a call (`tool_choice`, {@link Segment.required}) ends with one:
 *   a call to another tool than the one named is answered with a correction, and an answer without
 *   any call is the `missingCall` error instead of a text answer.
 */
import { randomBytes } from 'node:crypto';
import type { TaskRun, TaskUpdate } from '../client/index.js';
import { MAX_TOOL_ERROR, type PendingToolCall, type ToolAnswer, type ToolDefinition } from '../model/tools.js';
import type { TaskSpec } from '../model/task.js';
import { AnswerStream, finalText, usageOf } from './answer.js';
import type { HttpError } from './http.js';
import type { CancelWhy, RequestTask, RequestTaskRunner, TaskResult } from './request-task/index.js';
import type { TurnAnswer, TurnWriter } from './writer.js';
import { guardCall, type GuardCounts } from './bridge/guard.js';
import { BRIDGE_GUARD_KEY, type BridgeGuardCounts } from '../model/annotations.js';
import type { ToolResultIn } from './bridge/wire.js';
import type { ChatMessage, RequiredCall } from './request.js';

/**
 * How long a step's tool calls are gathered before its response ends: the calls an agent makes in
 * one step arrive together (one write per call, back to back), within this unless the machine is
 * very busy; the first byte of each call is written at once regardless. A call that comes later is
 * not lost: it opens the next response.
 */
export const STEP_GATHER_MS = 40;

/** What a run asks of the turn that made it. */
export interface BridgedRunOptions {
  runner: RequestTaskRunner;
  spec: TaskSpec & { tools: ToolDefinition[] };
  prompt: string;
  /** The client-side id prefix of the API (`call_`, `toolu_`). */
  idPrefix: string;
  /** The agent's scratch workspace (the guard's subject), if it has one. */
  workspace?: string;
  /** The client's project root (from its environment block). */
  hostRoot?: string;
  /** The session's guard counts (shared by its runs). */
  counts: GuardCounts;
  idleMs: number;
  /** Turns a task failure into the API error (./turn.ts). */
  failure(error: unknown, why: CancelWhy | undefined): HttpError;
  /** The error for an answer without the call a request's `tool_choice` required (./turn.ts). */
  missingCall(required: RequiredCall): HttpError;
  /** The task answered (text and usage so far) or ended: once. */
  onEnd(run: BridgedRun, result: BridgedRunEnd): void;
}

/** A response the run is writing to: its writer, and how its request learns that it is over. */
interface Segment {
  writer: TurnWriter;
  thinking: boolean;
  /** Where this response's text starts in the run's text. */
  offset: number;
  calls: number;
  /** The call this response's request requires (`tool_choice`), if any. */
  required: RequiredCall | undefined;
  done(): void;
  detach(): void;
}

export type BridgedRunState = 'running' | 'suspended' | 'ended';

/** How a run ended, for its turn. */
export interface BridgedRunEnd {
  answered?: string;
  agentSession?: string;
  /** Ended while waiting on the client's results: the calls' client ids, and the failure as the API's error. */
  unanswered?: { ids: string[]; error: HttpError };
}

export class BridgedRun {
  readonly abort = new AbortController();
  /** Calls the client was sent and has not answered: client id → the agent's call id. */
  readonly pending = new Map<string, string>();
  /** Hash of the transcript the next request must continue (the last request's messages). */
  history: string | undefined;
  /** Hears of each request's messages the run continues into (the transcript of its answer). */
  onHistory?: (messages: ChatMessage[]) => void;
  private readonly answer = new AnswerStream();
  private readonly request: RequestTask;
  private readonly offered: Set<string>;
  /** Calls that came while no response was open: written to the next one. */
  private readonly late: PendingToolCall[] = [];
  private segment: Segment | undefined;
  private gather: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;
  private stateNow: BridgedRunState = 'running';
  /** This run's own guard counts (the session's are in `options.counts`): its task's `meta.bridge_guard`. */
  private readonly guard: BridgeGuardCounts = { violations: 0, corrections: 0, unknown_tools: 0, replays: 0 };
  /** The annotations sent so far, in order (each carries the whole counts: the last one written wins). */
  private annotated: Promise<void> = Promise.resolve();

  constructor(private readonly options: BridgedRunOptions) {
    this.offered = new Set(options.spec.tools.map((tool) => tool.name));
    this.request = options.runner.start({
      spec: options.spec,
      abort: this.abort,
      onUpdate: (update) => this.onUpdate(update),
      // The deadline of a run waiting on its client: the client's results did not come in time (Y4).
      timeoutWhy: () => (this.stateNow === 'suspended' ? 'tool_results' : 'timeout'),
    });
    this.request.result.then(
      (final) => this.settle(final, undefined),
      (error: unknown) => this.settle(undefined, error),
    );
  }

  get state(): BridgedRunState {
    return this.stateNow;
  }

  get task(): TaskRun | undefined {
    return this.request.task as TaskRun | undefined;
  }

  /** Resolves once every process of the run is gone (or at once when it never started one). */
  get finished(): Promise<unknown> {
    return this.task?.finished ?? Promise.resolve();
  }

  /**
   * Writes the run to `writer` until it suspends or ends; `requestAbort` (the client left) cancels
   * the run. `required`: the call the request's `tool_choice` requires of this response.
   */
  attach(writer: TurnWriter, requestAbort: AbortController, thinking: boolean, required?: RequiredCall): Promise<void> {
    return new Promise<void>((resolve) => {
      const leave = () => this.abort.abort('disconnect' satisfies CancelWhy);
      const detach = () => requestAbort.signal.removeEventListener('abort', leave);
      this.segment = { writer, thinking, offset: this.answer.text.length, calls: 0, required, done: resolve, detach };
      clearTimeout(this.idle);
      if (requestAbort.signal.aborted) return leave();
      requestAbort.signal.addEventListener('abort', leave, { once: true });
      if (this.stateNow === 'suspended') this.stateNow = 'running';
      for (const call of this.late.splice(0)) this.onCall(call);
    });
  }

  /** The pending calls the results must answer, exactly (client ids). */
  matches(results: readonly ToolResultIn[]): boolean {
    const ids = new Set(results.map((r) => r.id));
    return ids.size === results.length && ids.size === this.pending.size && [...ids].every((id) => this.pending.has(id));
  }

  /**
   * Answers the pending calls with `results` (which `matches`) and streams on into `writer`.
   * Rejects (with nothing written) when the task no longer waits on them: the caller replays.
   */
  async continueWith(
    results: readonly ToolResultIn[],
    writer: TurnWriter,
    requestAbort: AbortController,
    thinking: boolean,
    required?: RequiredCall,
  ): Promise<void> {
    const task = this.task;
    if (!task || this.stateNow !== 'suspended') throw new Error('the run is not waiting for tool results');
    const answers = results.map((result) => [this.pending.get(result.id)!, forAgent(result.answer)] as const);
    this.pending.clear();
    const attached = this.attach(writer, requestAbort, thinking, required);
    try {
      await Promise.all(answers.map(([callId, answer]) => task.answerToolCall(callId, answer)));
    } catch (error) {
      if (this.segment?.writer === writer && this.segment.calls === 0 && this.answer.text.length === this.segment.offset) {
        this.endSegment();
        throw error;
      }
    }
    return attached;
  }

  /**
   * Cancels the run (another turn replaces it) and waits, bounded by the broker's own kill, for its
   * processes. A run still alive is counted as replayed in its task's meta first (`replays`).
   */
  async retire(reason = 'the client continued the conversation differently'): Promise<void> {
    const task = this.task;
    if (this.stateNow !== 'ended' && task) {
      this.guard.replays = 1;
      await this.annotate(task);
    }
    if (this.stateNow !== 'ended') this.task?.cancel(`bridge: ${reason}`);
    this.abort.abort('shutdown' satisfies CancelWhy);
    await this.finished.catch(() => {});
  }

  private onUpdate(update: TaskUpdate): void {
    if (update.kind === 'partial') {
      const data = update.payload?.data as { thinking?: unknown } | undefined;
      const segment = this.segment;
      if (segment && typeof data?.thinking === 'string' && segment.thinking) segment.writer.thinking(data.thinking, this.task!);
      const text = this.answer.push(data);
      if (segment) segment.writer.delta(text, this.task!);
    } else if (update.kind === 'tool_call' && update.toolCall) {
      this.onCall(update.toolCall);
    }
  }

  /** A call of the agent: corrected at once, or written to the response (or kept for the next one). */
  private onCall(call: PendingToolCall): void {
    const task = this.task!;
    // The counts reach the task's meta before the agent hears the correction (it cannot end before).
    const correct = (error: string) => void this.annotate(task).then(() => task.answerToolCall(call.callId, { error }).catch(() => {}));
    if (!this.offered.has(call.name)) {
      this.guard.unknown_tools += 1;
      return correct(`There is no tool \`${call.name}\` here: the client offers ${[...this.offered].join(', ') || 'no tools'}.`);
    }
    const session = this.options.counts;
    const before = { violations: session.violations, corrections: session.corrections };
    const verdict = guardCall(call.arguments, this.options.workspace, this.options.hostRoot, session);
    this.guard.violations += session.violations - before.violations;
    this.guard.corrections += session.corrections - before.corrections;
    if (verdict.action === 'correct') return correct(verdict.text);
    if (session.violations !== before.violations) void this.annotate(task);
    const segment = this.segment;
    if (!segment) return void this.late.push(call);
    const forced = segment.required?.name;
    if (forced !== undefined && call.name !== forced && segment.calls === 0)
      return correct(`Not run: the client requires a call to \`${forced}\` now (its tool_choice), not \`${call.name}\`.`);
    const id = `${this.options.idPrefix}${randomBytes(12).toString('hex')}`;
    this.pending.set(id, call.callId);
    segment.calls += 1;
    segment.writer.toolCall({ id, name: call.name, arguments: call.arguments }, task);
    clearTimeout(this.gather);
    this.gather = setTimeout(() => this.suspend(), STEP_GATHER_MS);
  }

  /** Writes this run's guard counts into its task's meta (`meta.bridge_guard`), after the ones before. */
  private annotate(task: TaskRun): Promise<void> {
    const counts = { ...this.guard };
    this.annotated = this.annotated.then(() => task.annotate({ [BRIDGE_GUARD_KEY]: counts }).catch(() => {}));
    return this.annotated;
  }

  /** Ends the response with the step's calls; the run waits for their results, at most `idleMs`. */
  private suspend(): void {
    const segment = this.segment;
    if (!segment || this.stateNow === 'ended') return;
    const text = this.answer.text.slice(segment.offset);
    segment.writer.finish({ text, usage: usageOf(undefined, undefined, this.options.prompt, text) }, this.task);
    segment.writer.close();
    this.endSegment();
    this.stateNow = 'suspended';
    this.idle = setTimeout(() => this.abort.abort('idle' satisfies CancelWhy), this.options.idleMs);
    this.idle.unref();
  }

  /** The task settled: the answer (or the failure) goes to the open response; the run is over. */
  private settle(final: TaskResult | undefined, error: unknown): void {
    clearTimeout(this.gather);
    clearTimeout(this.idle);
    this.stateNow = 'ended';
    const segment = this.segment;
    const task = this.task;
    let answered: string | undefined;
    let agentSession: string | undefined;
    if (segment && task) {
      if (final && segment.required && segment.calls === 0) {
        segment.writer.fail(this.options.missingCall(segment.required), task);
      } else if (final) {
        const rest =
          this.answer.text === ''
            ? (this.answer.complete(final.data) ?? '')
            : this.answer.finishStep(finalText(final.data), segment.offset);
        if (rest !== '') segment.writer.delta(rest, task);
        const text = this.answer.text.slice(segment.offset);
        const answer: TurnAnswer = { text, usage: usageOf(final.data, final.meta, this.options.prompt, text) };
        segment.writer.finish(answer, task);
        answered = text;
        const ids = [
          (final.data as { session_id?: unknown } | null)?.session_id,
          (final.meta as { session_id?: unknown } | null)?.session_id,
        ];
        agentSession = ids.find((id): id is string => typeof id === 'string');
      } else if (this.request.why !== 'disconnect') {
        segment.writer.fail(this.options.failure(error, this.request.why), task);
      }
      segment.writer.close();
      this.endSegment();
    } else if (segment) {
      if (!final && this.request.why !== 'disconnect') segment.writer.fail(this.options.failure(error, this.request.why), undefined);
      segment.writer.close();
      this.endSegment();
    }
    const why = this.request.why;
    const unanswered =
      !final && !segment && this.pending.size > 0 && (why === 'tool_results' || why === 'idle')
        ? { ids: [...this.pending.keys()], error: this.options.failure(error, why) }
        : undefined;
    this.options.onEnd(this, {
      ...(answered !== undefined ? { answered } : {}),
      ...(agentSession ? { agentSession } : {}),
      ...(unanswered ? { unanswered } : {}),
    });
  }

  private endSegment(): void {
    const segment = this.segment;
    if (!segment) return;
    this.segment = undefined;
    segment.detach();
    segment.done();
  }
}

/** The client's result as the agent's answer: an error text too long for one error answer is sent whole as content. */
function forAgent(answer: ToolAnswer): ToolAnswer {
  if ('error' in answer && (answer.error.length > MAX_TOOL_ERROR || answer.error.trim() === ''))
    return { content: `[tool error] ${answer.error}` };
  return answer;
}
