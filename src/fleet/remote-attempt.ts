/**
 * An attempt that runs on a fleet worker: queued as a BullMQ job, reported back through the hub
 * (./redis-queue.ts). To the broker it is a `RunningAttempt` like a local one: the outcome settles
 * once (a late or duplicate report is ignored), `finished` when the worker is done with the job.
 */
import { stopIsRetryable, type AttemptOutcome, type AttemptSettings, type AttemptSink, type StopReason } from '../broker/task/attempt.js';
import type { RunningAttempt } from '../broker/queue/attempt-queue.js';
import { ARG_TASK_ID, type FinalPayload } from '../protocol/index.js';
import type { DeliveryChannel } from '../model/task.js';
import { jobIdOf, type AttemptJob, type AttemptReport, type ControlMessage, type ProgressBatch } from './wire.js';

/** What a remote attempt needs from the hub. */
export interface AttemptHub {
  add(attempt: RemoteAttempt): Promise<void>;
  /** Asks the worker to stop the job; resolves true when the job was still waiting and is now removed. */
  stop(jobId: string, reason: StopReason, message: string): Promise<boolean>;
  send(message: ControlMessage): void;
  forget(jobId: string): void;
}

/** After a stop: the worker's grace periods plus this, then the attempt counts as finished anyway. */
const STOP_CONFIRM_MARGIN_MS = 10_000;

export class RemoteAttempt implements RunningAttempt {
  readonly outcome: Promise<AttemptOutcome>;
  readonly finished: Promise<void>;
  /** The job's id: `<task>.<attempt>`, and `<task>.<attempt>.again` once it runs again (see `lost`). */
  jobId: string;
  exitCode: number | null | undefined;
  exitSignal: NodeJS.Signals | null | undefined;
  /** After a stop: the agent's answer to it, from the worker's report (see `RunningAttempt.answer`). */
  answer: { payload: FinalPayload; channel: DeliveryChannel } | undefined;
  private decided: AttemptOutcome | undefined;
  private decide!: (outcome: AttemptOutcome) => void;
  private finish!: () => void;
  private done = false;
  private giveUp: NodeJS.Timeout | undefined;
  /** The worker that took the job, once it said so. */
  worker: string | undefined;
  /** The `seq` of the worker's next progress message. */
  private nextSeq = 0;
  /** The job already runs a second time, its first worker lost (see `lost`). */
  private again = false;

  constructor(
    private readonly hub: AttemptHub,
    private readonly settings: AttemptSettings,
    private readonly sink: AttemptSink,
  ) {
    this.jobId = jobIdOf(settings.taskId, settings.attempt);
    this.outcome = new Promise((resolve) => (this.decide = resolve));
    this.finished = new Promise((resolve) => (this.finish = resolve));
  }

  get job(): AttemptJob {
    const s = this.settings;
    // An ACP task travels as its agent's command line (what a worker judges), the task id argument last.
    const [command, ...args] = s.acp ? [...s.acp.agent, ...s.args.filter((arg) => arg.startsWith(ARG_TASK_ID))] : [s.command, ...s.args];
    return {
      taskId: s.taskId,
      attempt: s.attempt,
      command: command!,
      args,
      ...(s.acp ? { acp: { settings: s.acp.settings } } : {}),
      input: s.input ?? null,
      ...(s.tools && s.tools.length > 0 ? { tools: s.tools } : {}),
      timeoutMs: s.timeoutMs,
      heartbeatTimeoutMs: s.heartbeatTimeoutMs,
      ...(s.watchdogFromFirstHeartbeat ? { watchdogFromFirstHeartbeat: true } : {}),
      ...(s.preset !== undefined ? { preset: s.preset } : {}),
    };
  }

  async start(): Promise<void> {
    try {
      await this.hub.add(this);
    } catch (error) {
      this.failed(`could not queue the attempt on Redis: ${(error as Error).message}`, false);
    }
  }

  stop(reason: StopReason, message: string): void {
    if (this.done) return;
    this.settle({ kind: 'failure', reason, message, retryable: stopIsRetryable(reason) });
    this.sink.log('broker', `stopping: ${message}`, { kind: 'stopping', reason });
    void this.hub.stop(this.jobId, reason, message).then(
      (removed) => removed && this.end(),
      () => {},
    );
    // A worker that never confirms (all workers gone, Redis down) must not hold the broker's close forever.
    const s = this.settings;
    this.giveUp ??= setTimeout(
      () => {
        this.sink.log('broker', `no worker confirmed the stop within ${STOP_CONFIRM_MARGIN_MS} ms of its grace periods; giving up on it`);
        this.end();
      },
      s.cancelGraceMs + s.killGraceMs + STOP_CONFIRM_MARGIN_MS,
    );
  }

  /**
   * One progress message of the worker's reports, in order. A message missing before this one (`seq`
   * skipped: the broker read the queue's event stream so late that Redis had trimmed it) is said in
   * the task's log, never passed over silently.
   */
  onEvents({ seq, events }: Partial<ProgressBatch>): void {
    if (typeof seq === 'number') {
      if (seq < this.nextSeq) return; // read twice (an event stream read again after a reconnect)
      if (seq > this.nextSeq) {
        const lost = seq - this.nextSeq;
        this.sink.log(
          'broker',
          `${lost} of the worker's report messages were lost in Redis before the broker read them (its event stream was trimmed); partials are missing`,
        );
      }
      this.nextSeq = seq + 1;
    }
    for (const event of events ?? []) {
      if (event.t === 'placed') {
        this.worker = event.worker;
        this.sink.placed?.(event.worker);
      } else if (event.t === 'partial' && !this.decided) this.sink.partial(event.payload);
      else if (event.t === 'log') this.sink.log(event.stream, event.text, event.event);
      else if (event.t === 'problem') this.sink.problem(event.kind, event.detail, event.facts);
      else if (event.t === 'ask') this.sink.ask(event.message, (message) => this.hub.send({ t: 'reply', jobId: this.jobId, message }));
      else if (event.t === 'tool_call')
        this.sink.toolCall(event.message, (message) => this.hub.send({ t: 'reply', jobId: this.jobId, message }));
    }
  }

  /** True once the attempt ended (its job is over for the broker). */
  get isDone(): boolean {
    return this.done;
  }

  /** The job's return value: the worker's outcome (first final wins: a cancel decided here stays). */
  onCompleted(report: AttemptReport): void {
    this.exitCode = report.exitCode;
    this.exitSignal = report.exitSignal;
    // Stopped here first: the worker's report still brings the agent's answer to the stop, kept with the failure.
    if (this.decided && report.outcome.kind === 'failure' && report.outcome.answer) this.answer = report.outcome.answer;
    this.settle(report.outcome);
    this.end();
  }

  /**
   * The job's worker died before it finished (no report kept): its agents died with it (./keeper.ts),
   * so the attempt runs again on another worker, once — unless a stop was asked for (then it ends
   * as decided). A second loss fails it as `crashed`, and the task's own retries take over.
   */
  lost(why: string): void {
    if (this.done) return;
    if (this.again || this.decided) return this.failed(why);
    this.again = true;
    this.sink.log('broker', `${why}; the attempt runs again on another worker (once)`);
    this.hub.forget(this.jobId);
    this.jobId = `${jobIdOf(this.settings.taskId, this.settings.attempt)}.again`;
    this.nextSeq = 0;
    this.worker = undefined;
    void this.start();
  }

  /** The job failed without a report: its worker was lost (stalled) or Redis refused it. */
  failed(why: string, retryable = true): void {
    this.settle({ kind: 'failure', reason: 'crashed', message: why, retryable });
    this.end();
  }

  private settle(outcome: AttemptOutcome): void {
    if (this.decided) return;
    this.decided = outcome;
    this.decide(outcome);
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.giveUp);
    this.hub.forget(this.jobId);
    this.finish();
  }
}
