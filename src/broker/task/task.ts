/**
 * A task's record: its state machine, what the panel and CLI see (`snapshot()`), its bounded log,
 * and the `result` promise settled exactly once.
 */
import { EventEmitter } from 'node:events';
import { isoNow, progressOf, type FinalPayload, type Payload } from '../../protocol/index.js';
import { TaskError } from '../errors.js';
import type {
  BrokerMeta,
  DeliveryChannel,
  FailureReason,
  LogLine,
  PendingQuestion,
  TaskSnapshot,
  TaskSpec,
  TaskState,
  TaskUpdate,
  TaskUpdateKind,
} from '../../model/task.js';
import { FINISHED_STATES } from '../../model/task.js';

/** Lines of stderr shown with a failure. */
const STDERR_TAIL_LINES = 20;

export class Task {
  readonly result: Promise<FinalPayload>;
  readonly events = new EventEmitter();
  state: TaskState = 'queued';
  reason: FailureReason | undefined;
  message: string | undefined;
  attempt = 0;
  progress: number | undefined;
  lastPartial: unknown;
  readonly createdAt = isoNow();
  startedAt: string | undefined;
  endedAt: string | undefined;
  final: FinalPayload | undefined;
  pid: number | undefined;
  exitCode: number | null | undefined;
  exitSignal: string | null | undefined;
  pendingQuestion: PendingQuestion | undefined;
  readonly counters = { malformed: 0, rejected: 0, ignored: 0 };
  private readonly log: LogLine[] = [];
  private readonly stderr: string[] = [];
  private resolveResult!: (payload: FinalPayload) => void;
  private rejectResult!: (error: TaskError) => void;

  constructor(
    readonly id: string,
    readonly spec: TaskSpec,
    readonly label: string,
    readonly cwd: string,
    readonly maxAttempts: number,
    private readonly maxLogLines: number,
    private readonly emit: (update: TaskUpdate) => void,
  ) {
    this.result = new Promise<FinalPayload>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    // A caller that only listens to events must not get an unhandled rejection.
    this.result.catch(() => {});
    this.events.setMaxListeners(0);
  }

  get finished(): boolean {
    return FINISHED_STATES.includes(this.state);
  }

  update(kind: TaskUpdateKind, extra: Partial<TaskUpdate> = {}): void {
    const update: TaskUpdate = { taskId: this.id, kind, state: this.state, attempt: this.attempt, progress: this.progress, ...extra };
    this.events.emit('update', update);
    this.emit(update);
  }

  addLog(stream: LogLine['stream'], text: string): LogLine {
    const line: LogLine = { time: isoNow(), stream, text };
    this.log.push(line);
    if (this.log.length > this.maxLogLines) this.log.splice(0, this.log.length - this.maxLogLines);
    if (stream === 'stderr') {
      this.stderr.push(text);
      if (this.stderr.length > STDERR_TAIL_LINES) this.stderr.shift();
    }
    return line;
  }

  logLines(): LogLine[] {
    return this.log.slice();
  }

  stderrTail(): string | undefined {
    return this.stderr.length > 0 ? this.stderr.join('\n') : undefined;
  }

  startAttempt(attempt: number): void {
    this.attempt = attempt;
    this.state = 'running';
    this.startedAt ??= isoNow();
    this.stderr.length = 0;
    this.pid = undefined;
    this.exitCode = undefined;
    this.exitSignal = undefined;
  }

  recordPartial(payload: Payload): void {
    const progress = progressOf(payload);
    if (progress !== undefined) this.progress = progress;
    this.lastPartial = payload.data;
    this.update('partial', { payload });
  }

  succeed(payload: FinalPayload, channel: DeliveryChannel): void {
    if (this.finished) return;
    this.final = this.withBrokerMeta(payload, channel);
    this.state = 'succeeded';
    this.progress = 100;
    this.end();
    this.resolveResult(this.final);
  }

  fail(reason: FailureReason, message: string, payload?: FinalPayload, channel?: DeliveryChannel): void {
    if (this.finished) return;
    this.reason = reason;
    this.message = message;
    if (payload) this.final = this.withBrokerMeta(payload, channel ?? 'socket');
    this.state = reason === 'cancelled' ? 'cancelled' : 'failed';
    this.end();
    this.rejectResult(new TaskError(this.id, reason, `${this.label}: ${message}`, this.final, this.stderrTail()));
  }

  private end(): void {
    this.endedAt = isoNow();
    this.pendingQuestion = undefined;
    this.update('ended', { payload: this.final });
  }

  private withBrokerMeta(payload: FinalPayload, channel: DeliveryChannel): FinalPayload {
    const meta: BrokerMeta = {
      ...payload.meta,
      attempts: this.attempt,
      channel,
      exit_code: this.exitCode,
      received_at: isoNow(),
    };
    // The token proved the sender; it has no business in history or the UI.
    const { token: _token, ...rest } = payload as FinalPayload & { token?: string };
    return { ...rest, meta };
  }

  snapshot(): TaskSnapshot {
    const snap: TaskSnapshot = {
      id: this.id,
      label: this.label,
      state: this.state,
      command: this.spec.command,
      args: this.spec.args ?? [],
      cwd: this.cwd,
      attempt: this.attempt,
      maxAttempts: this.maxAttempts,
      createdAt: this.createdAt,
      counters: { ...this.counters },
    };
    if (this.reason) snap.reason = this.reason;
    if (this.message) snap.message = this.message;
    if (this.progress !== undefined) snap.progress = this.progress;
    if (this.lastPartial !== undefined) snap.lastPartial = this.lastPartial;
    if (this.startedAt) snap.startedAt = this.startedAt;
    if (this.endedAt) snap.endedAt = this.endedAt;
    if (this.final) snap.result = this.final;
    const tail = this.stderrTail();
    if (tail) snap.stderrTail = tail;
    if (this.exitCode !== undefined) snap.exitCode = this.exitCode;
    if (this.exitSignal !== undefined) snap.signal = this.exitSignal;
    if (this.pid !== undefined) snap.pid = this.pid;
    if (this.pendingQuestion) snap.pendingQuestion = this.pendingQuestion;
    if (this.spec.tags) snap.tags = this.spec.tags;
    return snap;
  }
}
