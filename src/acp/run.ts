/**
 * One ACP run as a Backchannel task: start the agent, shake hands, open (or continue) the session,
 * prompt it, and end with exactly one final payload that always carries the work so far. Between the
 * turn and the task sit the cancel (session/cancel, a short grace, then `cancelled`), the budget pause
 * (cancel the turn, ask, continue the same session or stop) and the coalesced live partials.
 */
import path from 'node:path';
import { methods, type ClientConnection, type PromptResponse } from '@agentclientprotocol/sdk';
import type { AgentTask } from '../agent-runtime/index.js';
import type { AgentProcess } from './agent-process.js';
import { Approvals } from './approvals.js';
import { Asker } from './asker.js';
import { Budget } from './budget.js';
import { AcpError, connectAgent, explain, handshake } from './connection.js';
import { FsService } from './fs-service.js';
import { openSession, type ContinuedBy } from './session.js';
import type { AcpSettings } from './settings.js';
import { TerminalService } from './terminal-service.js';
import { Work } from './work.js';

/** After a cancel, how long the turn may take to end `cancelled` before the work so far is sent anyway. */
export const CANCEL_GRACE_MS = 2000;
/** Live partials are coalesced: at most one per this period (usage goes at once). */
const PARTIAL_EVERY_MS = 100;
/** The transcript a follow-up may replay is bounded: its last turns, each one's end (the replay keeps 200k chars). */
const MAX_TRANSCRIPT_TURNS = 40;
const MAX_TRANSCRIPT_CHARS = 50_000;
/** What a raised budget's session is told. */
const CONTINUE_PROMPT = 'The budget was raised: continue where you left off.';

export type Outcome =
  | { status: 'success'; stopReason: string }
  | { status: 'cancelled'; message: string }
  | { status: 'error'; error: AcpError; stopReason?: string };

/** The prompt a task's input holds: a string, or `{prompt: string, …}` (nothing else of the input is used). */
export function promptOf(input: unknown): string {
  if (typeof input === 'string' && input.trim() !== '') return input;
  const prompt = typeof input === 'object' && input !== null ? (input as { prompt?: unknown }).prompt : undefined;
  if (typeof prompt === 'string' && prompt.trim() !== '') return prompt;
  throw new AcpError("the task's input must be a prompt: a string or {prompt: string}", 'settings');
}

export class AcpRun {
  readonly work = new Work();
  private readonly budget: Budget;
  private readonly asker: Asker;
  private approvals: Approvals | undefined;
  private connection: ClientConnection | undefined;
  private sessionId: string | undefined;
  private continuedBy: ContinuedBy = 'new';
  private agentName: string;
  private turnActive = false;
  private budgetHit: string | undefined;
  /** Arms the current turn's budget grace (set by turn()). */
  private onBudgetCancel: (() => void) | undefined;
  private partialTimer: NodeJS.Timeout | undefined;
  private prompt = '';

  constructor(
    private readonly task: AgentTask,
    private readonly settings: AcpSettings,
    /** The agent child, started by main.ts before the SDK loaded (stopped by run() whatever happens). */
    private readonly agent: AgentProcess,
    command: string,
    private readonly cwd: string,
  ) {
    this.budget = new Budget(settings);
    this.asker = new Asker(task);
    this.agentName = settings.agentName ?? path.basename(command);
    task.signal.addEventListener('abort', () => this.cancelTurn(), { once: true });
  }

  /** Runs to the end and sends the one final payload. */
  async run(): Promise<Outcome> {
    let outcome: Outcome;
    const approvals = new Approvals(this.asker, this.settings, this.work, this.cwd);
    const terminal = this.settings.terminal ? new TerminalService(this.cwd, approvals) : undefined;
    try {
      this.prompt = promptOf(this.task.input);
      outcome = await this.untilCancelled(this.start(approvals, terminal));
    } catch (error) {
      outcome = this.task.signal.aborted ? this.cancelled() : { status: 'error', error: await this.explain(error) };
    } finally {
      this.flushPartial();
      terminal?.closeAll();
      this.connection?.close();
    }
    await this.finish(outcome);
    await this.agent.stop();
    return outcome;
  }

  private async start(approvals: Approvals, terminal: TerminalService | undefined): Promise<Outcome> {
    this.approvals = approvals;
    const agent = this.agent;
    const services = {
      onUpdate: (sessionId: unknown, update: unknown) => this.onUpdate(sessionId, update),
      onMalformed: () => {
        if (this.work.malformedMessages++ === 0)
          this.work.refuse('the agent sent a line that is not a JSON-RPC message (refused; more are counted)');
      },
      approvals,
      fs: new FsService(this.cwd, approvals, this.work),
      ...(terminal ? { terminal } : {}),
    };
    const connection = (this.connection = connectAgent(agent, services));
    const { init } = await handshake(connection, agent, this.settings.terminal, this.settings.initTimeoutMs);
    if (init.agentInfo?.name && !this.settings.agentName) this.agentName = init.agentInfo.name;
    const opened = await openSession({ connection, agent, init, settings: this.settings, cwd: this.cwd, work: this.work });
    this.sessionId = opened.sessionId;
    this.continuedBy = opened.continuedBy;
    return this.turns((opened.preamble ?? '') + this.prompt);
  }

  /** Prompts until a turn ends for good; a budget pause asks, then continues the same session or stops. */
  private async turns(first: string): Promise<Outcome> {
    let text = first;
    for (;;) {
      const response = await this.turn(text);
      if (!response) return this.cancelled();
      if (this.work.addTurnUsage((response as { usage?: unknown }).usage)) this.sendUsage();
      if (this.task.signal.aborted) return this.cancelled();
      const paused = this.budgetHit ?? (response.stopReason === 'cancelled' ? this.budget.reached(this.work) : undefined);
      if (paused !== undefined && response.stopReason === 'cancelled') {
        this.flushPartial();
        if (!(await this.budget.askToRaise(this.asker, paused))) {
          return {
            status: 'error',
            error: new AcpError(`budget reached (${paused}): stopped`, 'budget_exceeded'),
            stopReason: 'cancelled',
          };
        }
        this.budgetHit = undefined;
        text = CONTINUE_PROMPT;
        continue;
      }
      return this.ending(response.stopReason);
    }
  }

  private ending(stopReason: string): Outcome {
    if (stopReason === 'refusal') {
      const said = this.work.text.trim().slice(-300);
      return { status: 'error', error: new AcpError(`the agent refused${said ? `: ${said}` : ''}`, 'refusal'), stopReason };
    }
    if (stopReason === 'cancelled') {
      return { status: 'error', error: new AcpError('the agent cancelled its turn by itself', 'agent_error'), stopReason };
    }
    return { status: 'success', stopReason };
  }

  /** One prompt turn; undefined when the task was cancelled and the turn did not end within the grace. */
  private async turn(text: string): Promise<PromptResponse | undefined> {
    const connection = this.connection!;
    this.turnActive = true;
    try {
      const request = connection.agent.request(methods.agent.session.prompt, {
        sessionId: this.sessionId!,
        prompt: [{ type: 'text', text }],
      });
      const response = await Promise.race([request, this.graceAfterCancel(), this.graceAfterBudget()]);
      // Updates sent just before the answer are handled on later ticks: read them before the result is built.
      await new Promise((resolve) => setImmediate(resolve));
      return response;
    } catch (error) {
      if (this.task.signal.aborted) return undefined;
      throw await explain(error, this.agent, 'in the middle of a turn');
    } finally {
      this.turnActive = false;
      this.onBudgetCancel = undefined;
    }
  }

  /**
   * Rejects CANCEL_GRACE_MS after the budget's cancel of the turn, when the agent spends on regardless:
   * the run ends over its budget (the agent is stopped) rather than let it go on.
   */
  private graceAfterBudget(): Promise<never> {
    return new Promise((_, reject) => {
      this.onBudgetCancel = () => {
        const figure = this.budgetHit;
        setTimeout(
          () => reject(new AcpError(`budget reached (${figure}): the agent did not stop its turn, so it was stopped`, 'budget_exceeded')),
          CANCEL_GRACE_MS,
        ).unref();
      };
    });
  }

  /** Resolves undefined CANCEL_GRACE_MS after the task's cancel (never, while it is not cancelled). */
  private graceAfterCancel(): Promise<undefined> {
    return new Promise((resolve) => {
      const arm = () => setTimeout(resolve, CANCEL_GRACE_MS, undefined).unref();
      if (this.task.signal.aborted) arm();
      else this.task.signal.addEventListener('abort', arm, { once: true });
    });
  }

  /** Races a stage with the task's cancel, so a cancel during the handshake does not wait for it. */
  private untilCancelled(stage: Promise<Outcome>): Promise<Outcome> {
    const cancelled = new Promise<Outcome>((resolve) => {
      if (this.task.signal.aborted) resolve(this.cancelled());
      // Outside a turn nothing is worth waiting for; in one, turn() gives it CANCEL_GRACE_MS (this is the backstop).
      const onAbort = () =>
        this.turnActive ? setTimeout(() => resolve(this.cancelled()), CANCEL_GRACE_MS + 500).unref() : resolve(this.cancelled());
      this.task.signal.addEventListener('abort', onAbort, { once: true });
    });
    return Promise.race([stage, cancelled]);
  }

  private cancelled(): Outcome {
    const reason = this.task.signal.reason as Error | undefined;
    return { status: 'cancelled', message: reason?.message ?? 'cancelled' };
  }

  /** session/cancel for the turn in flight (the task's cancel, or the budget's pause). */
  private cancelTurn(): void {
    if (!this.turnActive || !this.connection || !this.sessionId) return;
    this.approvals?.cancelTurn();
    void this.connection.agent.notify(methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
  }

  private onUpdate(sessionId: unknown, update: unknown): void {
    if (this.sessionId !== undefined && sessionId !== this.sessionId) return;
    const effect = this.work.apply(update);
    if (effect === 'shown') this.schedulePartial();
    if (effect !== 'usage') return;
    this.sendUsage();
    const figure = this.budget.reached(this.work);
    if (figure !== undefined && this.budgetHit === undefined && this.turnActive) {
      this.budgetHit = figure;
      this.cancelTurn();
      this.onBudgetCancel?.();
    }
  }

  private schedulePartial(): void {
    this.partialTimer ??= setTimeout(() => this.flushPartial(), PARTIAL_EVERY_MS);
  }

  private flushPartial(meta?: Record<string, unknown>): void {
    clearTimeout(this.partialTimer);
    this.partialTimer = undefined;
    this.task.partial(this.work.partialData(), meta);
  }

  /** Usage is sent at once (the panel's live figures, the broker's own budget guard). */
  private sendUsage(): void {
    this.flushPartial(this.work.usageMeta());
  }

  private async explain(error: unknown): Promise<AcpError> {
    if (error instanceof AcpError) return error;
    return explain(error, this.agent);
  }

  /** The final payload: success, cancelled or error, each with the work so far and the ACP figures in meta. */
  private async finish(outcome: Outcome): Promise<void> {
    const stopReason = outcome.status === 'success' ? outcome.stopReason : outcome.status === 'error' ? outcome.stopReason : 'cancelled';
    this.task.meta({
      ...this.work.usageMeta(),
      acp: {
        agent: this.agentName,
        session_id: this.sessionId ?? null,
        stop_reason: stopReason ?? null,
        continued_by: this.continuedBy,
        approvals: this.work.approvalCounts(),
        ignored_updates: this.work.ignoredUpdates,
        malformed_messages: this.work.malformedMessages,
        ...(this.budget.raises > 0 ? { budget_raises: this.budget.raises, caps: this.budget.caps() } : {}),
      },
    });
    const data = {
      ...this.work.data(),
      stop_reason: stopReason ?? null,
      session_id: this.sessionId ?? null,
      transcript: this.transcript(),
    };
    if (outcome.status === 'success') return this.task.succeed(data);
    if (outcome.status === 'cancelled') return this.task.cancelled({ message: outcome.message, ...data });
    const reason = outcome.error.code === 'budget_exceeded' ? { reason: 'budget_exceeded' } : {};
    return this.task.fail(outcome.error, { retryable: false, data: { ...data, code: outcome.error.code, ...reason } });
  }

  /** The conversation so far, for a follow-up that must replay it (earlier turns first). */
  private transcript(): unknown[] {
    const earlier = this.settings.session?.transcript ?? [];
    const turns = [...earlier, { role: 'user', text: this.prompt }, { role: 'agent', text: this.work.text }];
    return turns.slice(-MAX_TRANSCRIPT_TURNS).map((t) => {
      const text = (t as { text?: unknown }).text;
      return typeof text === 'string' && text.length > MAX_TRANSCRIPT_CHARS
        ? { ...(t as object), text: text.slice(-MAX_TRANSCRIPT_CHARS) }
        : t;
    });
  }
}
