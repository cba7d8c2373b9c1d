/**
 * A task's record: its state machine, what the panel and CLI see (`snapshot()`), its bounded log,
 * and the `result` promise settled exactly once.
 *
 * Every change goes through a transition method (`startAttempt`, `started`, `spawned`, `recordPartial`,
 * `log`, `recordProblem`, `ask`/`answered`, `toolCall`/`toolResult`, `retrying`, `succeed`/`fail`, `attemptExited`); each one
 * emits the matching update. Nothing outside this class writes its state.
 */
import { EventEmitter } from 'node:events';
import { isoNow, progressOf, withoutContent, type FinalPayload, type Payload } from '../../protocol/index.js';
import { TaskError } from '../errors.js';
import type { ChangeSummary, WorktreeInfo } from '../../model/change.js';
import {
  isFinished,
  type BrokerMeta,
  type DeliveryChannel,
  type FailureReason,
  type LogEvent,
  type LogLine,
  type PendingQuestion,
  type PendingToolCall,
  type ProblemKind,
  type TaskSnapshot,
  type TaskSpec,
  type TaskState,
  type TaskUpdate,
  type TaskUpdateKind,
} from '../../model/task.js';
import { mergeAnnotations, type Annotations } from '../../model/annotations.js';
import { partialResultOf } from '../../model/states.js';
import { callInSnapshot } from '../../model/tools.js';
import { addUsage, budgetOf, laterUsage, readUsage, type TaskUsage } from '../../model/usage.js';

/** Lines of stderr shown with a failure. */
const STDERR_TAIL_LINES = 20;

/** The facts of a problem beyond its kind and detail (see the `problem` LogEvent). */
export type ProblemFacts = Pick<Extract<LogEvent, { kind: 'problem' }>, 'cause' | 'status'>;

/** A decided ending: what `publishEnd` applies, and how it settles `result`. */
interface Ending {
  state: TaskState;
  reason?: FailureReason;
  message?: string;
  detail?: string;
  final: FinalPayload | undefined;
  progress?: number;
  endedAt: string;
  settle(): void;
}

export interface TaskIdentity {
  id: string;
  spec: TaskSpec;
  label: string;
  cwd: string;
  maxAttempts: number;
}

export class Task {
  readonly id: string;
  readonly spec: TaskSpec;
  readonly label: string;
  readonly cwd: string;
  readonly maxAttempts: number;
  readonly result: Promise<FinalPayload>;
  private readonly events = new EventEmitter();
  private currentState: TaskState = 'queued';
  private reason: FailureReason | undefined;
  private message: string | undefined;
  private detail: string | undefined;
  private attemptNumber = 0;
  private currentProgress: number | undefined;
  private partialData: unknown;
  private created = isoNow();
  private startedAt: string | undefined;
  private endedAt: string | undefined;
  private finalPayload: FinalPayload | undefined;
  private pid: number | undefined;
  private worker: string | undefined;
  private exitCode: number | null | undefined;
  private exitSignal: string | null | undefined;
  private question: PendingQuestion | undefined;
  /** Calls to the caller's tools waiting for their answer, oldest first. */
  private toolCalls: PendingToolCall[] = [];
  /** The waiting calls as snapshots show them (long arguments as a preview: callInSnapshot), made once per call. */
  private shownCalls: PendingToolCall[] = [];
  private worktreeInfo: WorktreeInfo | undefined;
  private changeSummary: ChangeSummary | undefined;
  /** What the task's caller annotated (`annotate`): merged into the final payload's meta. */
  private annotations: Annotations | undefined;
  private readonly counters = { malformed: 0, rejected: 0, ignored: 0 };
  /** Usage of the attempts before this one, added up; and this attempt's latest report (a running total). */
  private earlierUsage: TaskUsage | undefined;
  private attemptUsage: TaskUsage | undefined;
  private readonly lines: LogLine[] = [];
  private readonly stderr: string[] = [];
  private resolveResult!: (payload: FinalPayload) => void;
  private rejectResult!: (error: TaskError) => void;
  /** The ending decided but not shown yet (see `holdEnd`): nothing outside sees it until `publishEnd`. */
  private ending: Ending | undefined;
  private holding = false;

  constructor(
    identity: TaskIdentity,
    private readonly maxLogLines: number,
    private readonly emit: (update: TaskUpdate) => void,
  ) {
    ({ id: this.id, spec: this.spec, label: this.label, cwd: this.cwd, maxAttempts: this.maxAttempts } = identity);
    this.result = new Promise<FinalPayload>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    // A caller that only listens to events must not get an unhandled rejection.
    this.result.catch(() => {});
    this.events.setMaxListeners(0);
  }

  /**
   * A task read back from history, so that a late result (a spool file) is applied by the same
   * transitions as a live one. The interruption's reason and message are not carried: they are replaced.
   */
  static fromSnapshot(snapshot: TaskSnapshot, emit: (update: TaskUpdate) => void): Task {
    const spec: TaskSpec = { command: snapshot.command, args: snapshot.args, ...(snapshot.tags ? { tags: snapshot.tags } : {}) };
    const identity = { id: snapshot.id, spec, label: snapshot.label, cwd: snapshot.cwd, maxAttempts: snapshot.maxAttempts };
    const task = new Task(identity, 0, emit);
    task.currentState = snapshot.state;
    task.attemptNumber = snapshot.attempt;
    task.currentProgress = snapshot.progress;
    task.partialData = snapshot.lastPartial;
    task.created = snapshot.createdAt;
    task.startedAt = snapshot.startedAt;
    task.endedAt = snapshot.endedAt;
    task.finalPayload = snapshot.result;
    task.pid = snapshot.pid;
    task.worker = snapshot.worker;
    task.exitCode = snapshot.exitCode;
    task.exitSignal = snapshot.signal;
    task.question = snapshot.pendingQuestion;
    task.worktreeInfo = snapshot.worktree;
    task.changeSummary = snapshot.change;
    task.annotations = snapshot.annotations;
    Object.assign(task.counters, snapshot.counters);
    task.earlierUsage = snapshot.usage;
    if (snapshot.stderrTail) task.stderr.push(...snapshot.stderrTail.split('\n'));
    return task;
  }

  get state(): TaskState {
    return this.currentState;
  }

  /** Ended, as everyone sees it (its ending published). */
  get finished(): boolean {
    return isFinished(this.currentState);
  }

  /** Ended, or its ending decided and waiting to be published (see `holdEnd`): it settles no more. */
  get decided(): boolean {
    return this.finished || this.ending !== undefined;
  }

  /** Not yet decided: live and unfinished, or interrupted (history) and waiting for a spooled result. */
  private get open(): boolean {
    return this.ending === undefined && (!this.finished || this.currentState === 'interrupted');
  }

  /**
   * The next `succeed`/`fail` is decided but not shown: state, snapshot, `ended` update and `result`
   * stay as they were until `publishEnd()` (the broker first makes the ending durable). The decided
   * ending is `decidedSnapshot()` / `decidedFinal` meanwhile.
   */
  holdEnd(): void {
    this.holding = true;
  }

  /** Shows the held ending: the state changes, the `ended` update goes out, `result` settles. */
  publishEnd(): void {
    const ending = this.ending;
    this.holding = false;
    if (!ending) return;
    this.ending = undefined;
    this.currentState = ending.state;
    this.reason = ending.reason ?? this.reason;
    if (ending.message !== undefined) this.message = ending.message;
    if ('detail' in ending) this.detail = ending.detail;
    this.finalPayload = ending.final;
    if (ending.progress !== undefined) this.currentProgress = ending.progress;
    this.endedAt = ending.endedAt;
    this.question = undefined;
    this.toolCalls = [];
    this.update('ended', this.finalPayload && withoutContent(this.finalPayload));
    ending.settle();
  }

  /** The final payload decided (held or shown), with the broker's meta. */
  get decidedFinal(): FinalPayload | undefined {
    return this.ending ? this.ending.final : this.finalPayload;
  }

  /** The snapshot as it is once the held ending is published (the plain snapshot when none is held). */
  decidedSnapshot(): TaskSnapshot {
    const snap = this.snapshot();
    const ending = this.ending;
    if (!ending) return snap;
    snap.state = ending.state;
    if (ending.reason) snap.reason = ending.reason;
    if (ending.message !== undefined) snap.message = ending.message;
    if (ending.detail !== undefined) snap.detail = ending.detail;
    if (ending.progress !== undefined) snap.progress = ending.progress;
    snap.endedAt = ending.endedAt;
    if (ending.final) snap.result = withoutContent(ending.final);
    delete snap.pendingQuestion;
    return snap;
  }

  get attempt(): number {
    return this.attemptNumber;
  }

  get createdAt(): string {
    return this.created;
  }

  get progress(): number | undefined {
    return this.currentProgress;
  }

  /** `data` of the last partial payload. */
  get lastPartial(): unknown {
    return this.partialData;
  }

  /** The final payload, with the broker's meta, once there is one. */
  get final(): FinalPayload | undefined {
    return this.finalPayload;
  }

  /** What the agent reported spending, all attempts together; undefined until it reports something. */
  get usage(): TaskUsage | undefined {
    if (!this.attemptUsage) return this.earlierUsage;
    return this.earlierUsage ? addUsage(this.earlierUsage, this.attemptUsage) : this.attemptUsage;
  }

  /** The task's usage once `payload`'s report counts too (a final payload's, before it is applied). */
  usageWith(payload: Payload): TaskUsage | undefined {
    const reported = readUsage(payload.meta, payload.data).usage;
    if (!reported) return this.usage;
    const attempt = laterUsage(this.attemptUsage, reported);
    return this.earlierUsage ? addUsage(this.earlierUsage, attempt) : attempt;
  }

  /** The id of the question waiting for an answer, if any. */
  get pendingAskId(): string | undefined {
    return this.question?.askId;
  }

  /** Listens to this task's updates; returns the unsubscribe function. */
  onUpdate(listener: (update: TaskUpdate) => void): () => void {
    this.events.on('update', listener);
    return () => this.events.off('update', listener);
  }

  /** The task was registered and waits in the queue. */
  queued(): void {
    this.update('queued');
  }

  /** Attempt `number` begins: running again, with no process yet. */
  startAttempt(number: number): void {
    this.attemptNumber = number;
    this.currentState = 'running';
    // A new attempt reports its own running total from zero: what the last one spent is kept apart.
    this.earlierUsage = this.usage;
    this.attemptUsage = undefined;
    this.startedAt ??= isoNow();
    this.stderr.length = 0;
    this.pid = undefined;
    this.exitCode = undefined;
    this.exitSignal = undefined;
    // The worker is the attempt's: until the new attempt is placed, no snapshot names the old one.
    this.worker = undefined;
  }

  /** The attempt is set up and announced. */
  started(): void {
    this.update('started');
  }

  spawned(pid: number): void {
    this.pid = pid;
  }

  /** The attempt runs on fleet worker `worker` (announced as a log line). */
  placed(worker: string): void {
    this.worker = worker;
    this.log('broker', `attempt ${this.attemptNumber} runs on worker ${worker}`, { kind: 'placed', worker });
  }

  recordPartial(payload: Payload): void {
    this.recordUsage(payload);
    const progress = progressOf(payload);
    if (progress !== undefined) this.currentProgress = progress;
    // A partial without data (a usage report: only meta) leaves the last partial's data as it was.
    if (payload.data !== undefined) this.partialData = payload.data;
    this.update('partial', payload);
  }

  /** A log line, announced as a `log` update; `event` says what a broker note is, for programs. */
  log(stream: LogLine['stream'], text: string, event?: LogEvent): LogLine {
    const line = this.addLog(stream, text, event);
    this.update('log', undefined, line);
    return line;
  }

  /** Counts a line the broker could not use and notes it in the log (no update: these can be many). */
  recordProblem(kind: ProblemKind, detail: string, facts: ProblemFacts = {}): void {
    this.counters[kind] += 1;
    this.addLog('broker', `${kind}: ${detail}`, { kind: 'problem', problem: kind, detail, ...facts });
  }

  ask(question: Omit<PendingQuestion, 'askedAt'>): void {
    this.question = { ...question, askedAt: isoNow() };
    this.update('ask');
  }

  /** The question is settled (answered, or given up with `note` in the log). */
  answered(note?: string): void {
    this.question = undefined;
    if (note !== undefined) this.addLog('broker', note);
    this.update('answered');
  }

  /** The agent called a tool its caller hosts; the call waits for the caller's answer. */
  toolCall(call: Omit<PendingToolCall, 'calledAt'>): void {
    const pending: PendingToolCall = { ...call, calledAt: isoNow() };
    this.toolCalls = [...this.toolCalls, pending];
    this.shownCalls = [...this.shownCalls, callInSnapshot(pending)];
    this.update('tool_call', undefined, undefined, pending);
  }

  /** The call `callId` waits no more (answered, or dropped with its attempt). */
  toolResult(callId: string): void {
    const call = this.toolCalls.find((c) => c.callId === callId);
    if (!call) return;
    this.toolCalls = this.toolCalls.filter((c) => c !== call);
    this.shownCalls = this.shownCalls.filter((c) => c.callId !== callId);
    this.update('tool_result', undefined, undefined, call);
  }

  /** Attempt `number` failed with `why` and another follows after `delayMs`. */
  retrying(why: string, delayMs: number): void {
    this.currentState = 'retrying';
    this.message = why;
    this.addLog('broker', `attempt ${this.attemptNumber} failed (${why}); retrying in ${delayMs} ms`, {
      kind: 'retrying',
      attempt: this.attemptNumber,
      delayMs,
    });
    this.update('retrying');
  }

  /** The decided attempt's processes are gone: record how the process ended. */
  attemptExited(exitCode: number | null | undefined, exitSignal: string | null): void {
    this.pid = undefined;
    this.exitCode = exitCode;
    this.exitSignal = exitSignal;
    this.update('exited');
  }

  succeed(payload: FinalPayload, channel: DeliveryChannel): void {
    if (!this.open) return;
    this.recordUsage(payload);
    const final = this.withBrokerMeta(payload, channel);
    this.decideEnd({ state: 'succeeded', final, progress: 100 }, () => this.resolveResult(final));
  }

  /** `detail`: the message without the framing the reason says (see `TaskSnapshot.detail`). */
  fail(reason: FailureReason, message: string, payload?: FinalPayload, channel?: DeliveryChannel, detail?: string): void {
    if (!this.open) return;
    if (payload) this.recordUsage(payload);
    const final = payload ? this.withBrokerMeta(payload, channel ?? 'socket') : this.finalPayload;
    const state = reason === 'cancelled' ? 'cancelled' : 'failed';
    // What a stopped agent had produced goes with its failure (model/task.ts PartialResult).
    const partialResult = partialResultOf({
      state,
      reason,
      lastPartial: this.partialData,
      progress: this.currentProgress,
      result: final && withoutContent(final),
      change: this.changeSummary,
    });
    const error = new TaskError(this.id, reason, `${this.label}: ${message}`, final, this.stderrTail(), {
      taskMessage: message,
      ...(detail !== undefined ? { detail } : {}),
      ...(partialResult ? { partialResult } : {}),
    });
    this.decideEnd({ state, reason, message, detail, final }, () => this.rejectResult(error));
  }

  /** Records the ending; shows it now, or when `publishEnd` is called if it is held. */
  private decideEnd(ending: Omit<Ending, 'endedAt' | 'settle'>, settle: () => void): void {
    this.ending = { ...ending, endedAt: isoNow(), settle };
    if (!this.holding) this.publishEnd();
  }

  /** The content of one attachment of the final payload (snapshots carry only its name and size). */
  attachment(name: string): string | Uint8Array | undefined {
    return this.finalPayload?.attachments?.find((a) => a.name === name)?.content;
  }

  logLines(): LogLine[] {
    return this.lines.slice();
  }

  /** Adds a line to the bounded log without announcing it. */
  addLog(stream: LogLine['stream'], text: string, event?: LogEvent): LogLine {
    const line: LogLine = event ? { time: isoNow(), stream, text, event } : { time: isoNow(), stream, text };
    this.lines.push(line);
    if (this.lines.length > this.maxLogLines) this.lines.splice(0, this.lines.length - this.maxLogLines);
    if (stream === 'stderr') {
      this.stderr.push(text);
      if (this.stderr.length > STDERR_TAIL_LINES) this.stderr.shift();
    }
    return line;
  }

  /** The worktree the task runs in (made before its first attempt); shown from now on. */
  setWorktree(info: WorktreeInfo): void {
    this.worktreeInfo = info;
  }

  /**
   * Merges the caller's `annotations` (checked: model/annotations.ts) into the task's; they go into
   * its final payload's meta. False once the task is decided: its meta is written then.
   */
  /** What the caller annotated so far. */
  get annotated(): Annotations | undefined {
    return this.annotations;
  }

  annotate(annotations: Annotations): boolean {
    if (!this.open) return false;
    this.annotations = mergeAnnotations(this.annotations, annotations);
    return true;
  }

  /** The change recorded after its processes are gone; announced by the `exited` update that follows. */
  setChange(change: ChangeSummary): void {
    this.changeSummary = change;
  }

  snapshot(): TaskSnapshot {
    const snap: TaskSnapshot = {
      id: this.id,
      label: this.label,
      state: this.currentState,
      command: this.spec.command,
      args: this.spec.args ?? [],
      cwd: this.cwd,
      attempt: this.attemptNumber,
      maxAttempts: this.maxAttempts,
      createdAt: this.created,
      counters: { ...this.counters },
    };
    if (this.reason) snap.reason = this.reason;
    if (this.message) snap.message = this.message;
    if (this.detail !== undefined) snap.detail = this.detail;
    if (this.currentProgress !== undefined) snap.progress = this.currentProgress;
    if (this.partialData !== undefined) snap.lastPartial = this.partialData;
    if (this.startedAt) snap.startedAt = this.startedAt;
    if (this.endedAt) snap.endedAt = this.endedAt;
    if (this.finalPayload) snap.result = withoutContent(this.finalPayload);
    const tail = this.stderrTail();
    if (tail) snap.stderrTail = tail;
    if (this.exitCode !== undefined) snap.exitCode = this.exitCode;
    if (this.exitSignal !== undefined) snap.signal = this.exitSignal;
    if (this.pid !== undefined) snap.pid = this.pid;
    if (this.worker !== undefined) snap.worker = this.worker;
    if (this.question) snap.pendingQuestion = this.question;
    if (this.toolCalls.length > 0) snap.pendingToolCalls = this.shownCalls;
    if (this.spec.tags) snap.tags = this.spec.tags;
    if (this.worktreeInfo) snap.worktree = this.worktreeInfo;
    if (this.changeSummary) snap.change = this.changeSummary;
    if (this.annotations) snap.annotations = this.annotations;
    if (this.spec.parent !== undefined) snap.parent = this.spec.parent;
    const usage = this.usage;
    if (usage) snap.usage = usage;
    const budget = budgetOf(this.spec);
    if (budget) snap.budget = budget;
    return snap;
  }

  /** Folds the usage a payload reports (the attempt's running total) into the task's. */
  private recordUsage(payload: Payload): void {
    const { usage, refused } = readUsage(payload.meta, payload.data);
    // A figure no run can reach (1e308 tokens) is refused whole and counted: it would poison every sum (Y38).
    if (refused !== undefined) this.recordProblem('rejected', `usage report refused: ${refused}`, { cause: 'limit' });
    if (usage) this.attemptUsage = laterUsage(this.attemptUsage, usage);
  }

  private stderrTail(): string | undefined {
    return this.stderr.length > 0 ? this.stderr.join('\n') : undefined;
  }

  /**
   * Announces a change. Every update has the same shape (payload and line always present), which keeps
   * listeners fast. Positional arguments, and the task's own emitter asked only when someone listens
   * to this task: a partial, the most frequent update, allocates its update object and nothing else.
   */
  private update(kind: TaskUpdateKind, payload?: Payload, line?: LogLine, toolCall?: PendingToolCall): void {
    const update: TaskUpdate = {
      taskId: this.id,
      kind,
      state: this.currentState,
      attempt: this.attemptNumber,
      progress: this.currentProgress,
      payload,
      line,
    };
    if (toolCall) update.toolCall = toolCall;
    if (this.events.listenerCount('update') > 0) this.events.emit('update', update);
    this.emit(update);
  }

  private withBrokerMeta(payload: FinalPayload, channel: DeliveryChannel): FinalPayload {
    const meta: BrokerMeta = {
      ...payload.meta,
      ...this.annotations,
      attempts: this.attemptNumber,
      channel,
      exit_code: this.exitCode,
      received_at: isoNow(),
    };
    // The token proved the sender; it has no business in history or the UI.
    const { token: _token, ...rest } = payload as FinalPayload & { token?: string };
    return { ...rest, meta };
  }
}
