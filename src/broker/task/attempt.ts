/**
 * One run of a sub-agent process: endpoint up, process spawned, output and messages read, guards
 * armed, and — however it ends — the process group gone and the endpoint removed.
 *
 * `outcome` settles as soon as the attempt is decided (first final payload, or a failure), so results
 * reach the caller without waiting for the process to exit; `finished` settles when cleanup is done.
 */
import {
  isFinalStatus,
  PROTOCOL_VERSION,
  type AskMessage,
  type BrokerMessage,
  type FinalPayload,
  type OfferedTool,
  type Payload,
  type ToolCallMessage,
} from '../../protocol/index.js';
import { readSpooled, removeSpoolFile, spoolPath } from '../../protocol/spool.js';
import { AttemptTimers } from '../guards/watchdog.js';
import type { AgentCpu } from '../process/agent-weight.js';
import { groupAlive, killTree, terminateTree, type TerminateOptions } from '../../base/kill-tree.js';
import { handOffEnv } from '../process/environment.js';
import {
  checkWorkingDirectory,
  describeSpawnError,
  resolveCommand,
  spawnAgent,
  SpawnError,
  type AgentProcess,
} from '../process/spawn-agent.js';
import { TaskChannel, type ChannelHandlers, type ChannelLimits } from '../transport/channel.js';
import { IS_WINDOWS, newEndpointAddress } from '../transport/endpoint.js';
import { randomHex } from '../transport/names.js';
import { redactToken, traceable } from '../transport/inbound.js';
import { ChannelTally } from './tally.js';
import { readStderr, readStdout, type OutputHandlers } from '../transport/stdout.js';
import type { TaskEndpoint } from '../transport/task-endpoint.js';
import type { DeliveryChannel, FailureReason, LogEvent, ProblemKind, RejectCause } from '../../model/task.js';
import type { ProblemFacts } from './task.js';

export type StopReason = 'timeout' | 'stalled' | 'cancelled' | 'budget_exceeded';

/** A stop worth another attempt: a deadline or a stall may go better; a cancel or a spent budget is final. */
export function stopIsRetryable(reason: StopReason): boolean {
  return reason === 'timeout' || reason === 'stalled';
}

export type AttemptOutcome =
  | { kind: 'final'; payload: FinalPayload; channel: DeliveryChannel }
  /** `detail`: the message without the framing the reason says (see `TaskSnapshot.detail`). */
  | {
      kind: 'failure';
      reason: FailureReason;
      message: string;
      detail?: string;
      retryable: boolean;
      /** A stopped agent's answer to the stop (see `Attempt.answer`): kept as the failed task's result. */
      answer?: { payload: FinalPayload; channel: DeliveryChannel };
    };

export interface AttemptSettings {
  taskId: string;
  attempt: number;
  command: string;
  args: string[];
  /** The template or preset the command line is (`TaskSpec.preset`): a fleet worker runs its own copy. */
  preset?: string;
  cwd: string;
  env: Record<string, string>;
  input: unknown;
  /** The tools the task's caller hosts, offered to the agent in its `welcome` (docs/protocol.md §6.1). */
  tools?: OfferedTool[];
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  /**
   * The default watchdog: armed by the agent's first heartbeat, not at the start (see
   * guards/watchdog.ts); the agent is still asked to heartbeat every third of `heartbeatTimeoutMs`.
   */
  watchdogFromFirstHeartbeat?: boolean;
  endpointDir: string;
  spoolDir: string;
  limits: ChannelLimits;
  /** After `cancel` is sent: time the agent gets to stop by itself before SIGTERM. */
  cancelGraceMs: number;
  /** After SIGTERM: time before SIGKILL. */
  killGraceMs: number;
  /** After exit: how long to wait for output still in flight (and for pipes held by grandchildren). */
  drainMs: number;
  /** Log the first 100 characters of every received line (the design's debugging advice). */
  traceLines: boolean;
  /** Refuse a socket connection whose first line has no token (always so on Windows named pipes). */
  requireToken: boolean;
  /** How the agent weighs on the CPU (BrokerOptions.agentCpu). */
  agentCpu: AgentCpu;
  /**
   * An ACP task (set by the ACP kind's launch, src/broker/acp/): the agent's own command line and the
   * adapter's settings (BACKCHANNEL_ACP). A fleet worker judges the agent and runs it under its own adapter.
   */
  acp?: { agent: string[]; settings: string };
  /**
   * A process started before this attempt for its command, taken instead of a fresh spawn (a kind's
   * spare, set by its launch: the ACP kind's warm adapter, src/broker/acp/spare.ts). Called once, when
   * the attempt starts its agent, with the settings and the environment a fresh process would get
   * (the hand-off included); returns the process, already handed its task (cwd, environment) and
   * leading its own process group as a fresh one does, or undefined: a fresh spawn. Never throws.
   * Local attempts only (a fleet's worker spawns its own).
   */
  spare?: (settings: AttemptSettings, env: Record<string, string>) => AgentProcess | undefined;
}

/** What an attempt reports upward while it runs. */
export interface AttemptSink {
  partial(payload: Payload): void;
  /** `event`: what a broker note is, for programs (see `LogLine.event`). */
  log(stream: 'stdout' | 'stderr' | 'broker', text: string, event?: LogEvent): void;
  problem(kind: ProblemKind, detail: string, facts?: ProblemFacts): void;
  ask(message: AskMessage, reply: (message: BrokerMessage) => void): void;
  /** A call to a tool the caller hosts; `reply` carries its `tool_result` (see PendingToolCalls). */
  toolCall(message: ToolCallMessage, reply: (message: BrokerMessage) => void): void;
  spawned(pid: number): void;
  /** The attempt runs on a fleet worker (only attempts sent through a remote queue report this). */
  placed?(worker: string): void;
}

/** The outside world an attempt touches; the real one by default, an in-memory one in unit tests. */
export interface AttemptIO {
  /** Creates (does not open) the endpoint the agent will connect to. */
  endpoint(settings: AttemptSettings, token: string, handlers: ChannelHandlers): TaskEndpoint;
  /** Throws a SpawnError when the working directory is unusable. */
  checkCwd(cwd: string): void;
  /** Starts the agent (leading its own process group). */
  spawn(settings: AttemptSettings, env: Record<string, string>): AgentProcess;
  /** SIGTERM then SIGKILL to the agent's tree (see base/kill-tree.ts); returns a cancel function. */
  terminate(pid: number, options: TerminateOptions): () => void;
  /** After the attempt: kill what is left of the agent's process group; true when something was left. */
  reap(pid: number): boolean | void;
}

export const REAL_IO: AttemptIO = {
  endpoint: (s, token, handlers) =>
    new TaskChannel(newEndpointAddress(s.endpointDir), s.taskId, token, handlers, s.limits, {
      requireToken: s.requireToken || IS_WINDOWS,
    }),
  checkCwd: checkWorkingDirectory,
  spawn: (s, env) => spawnAgent(resolveCommand(s.command, s.args), s.cwd, env, s.agentCpu),
  terminate: terminateTree,
  reap: (pid) => {
    // Grandchildren left in the group (forked workers, a shell's children) go with the task.
    if (process.platform === 'win32' || !groupAlive(pid)) return false;
    killTree(pid, 'SIGKILL');
    return true;
  },
};

export class Attempt {
  readonly outcome: Promise<AttemptOutcome>;
  readonly finished: Promise<void>;
  exitCode: number | null | undefined;
  exitSignal: NodeJS.Signals | null | undefined;
  /** After a stop: the final payload the agent sent as it stopped (its answer to `cancel`), kept, not ignored. */
  answer: { payload: FinalPayload; channel: DeliveryChannel } | undefined;

  private decide!: (outcome: AttemptOutcome) => void;
  private finish!: () => void;
  private decided: AttemptOutcome | undefined;
  private child: AgentProcess | undefined;
  private channel: TaskEndpoint | undefined;
  private timers: AttemptTimers | undefined;
  private stopReason: StopReason | undefined;
  private exited = false;
  private readonly pendingKills: Array<() => void> = [];
  /** Refused connections and malformed lines, for a failure message that says what happened. */
  private readonly tally = new ChannelTally();
  private token = '';
  /** Tool calls of this attempt's agent waiting for their result, by call id (a count: a refused duplicate id replies too). */
  private readonly toolCallsWaiting = new Map<string, number>();
  /** Acks of a final payload, held until acknowledge() (undefined once sent: later ones go at once). */
  private heldAcks: Array<() => void> | undefined = [];
  /** The outcome (or a stop's answer) came from the spool file, which goes once that is durable. */
  private spoolTaken = false;

  constructor(
    private readonly settings: AttemptSettings,
    private readonly sink: AttemptSink,
    private readonly io: AttemptIO = REAL_IO,
  ) {
    this.outcome = new Promise((resolve) => (this.decide = resolve));
    this.finished = new Promise((resolve) => (this.finish = resolve));
  }

  /**
   * Sends the ack of the agent's final payload, held since it arrived, and removes a spool file the
   * outcome was taken from: the caller (the attempt loop) calls it once the task's ending is durable,
   * or when the attempt's outcome is not its ending (a retry). Until then the agent waits for its ack
   * and, if the hub dies meanwhile, spools its result; a spool file taken stays for the next hub.
   */
  acknowledge(): void {
    const acks = this.heldAcks;
    if (!acks) return;
    this.heldAcks = undefined;
    if (this.spoolTaken) removeSpoolFile(spoolPath(this.settings.spoolDir, this.settings.taskId));
    for (const ack of acks) ack();
  }

  /** Acks a final payload: held while the attempt's own final waits to be durable, else at once (a stop's answer). */
  private ack(status: FinalPayload['status'], reply: ((message: BrokerMessage) => void) | undefined): void {
    const send = () => reply?.({ type: 'ack', task_id: this.settings.taskId, status });
    if (this.decided?.kind === 'final' && this.heldAcks) this.heldAcks.push(send);
    else send();
  }

  /** Starts the attempt. Never throws: every failure becomes the outcome. */
  async start(): Promise<void> {
    const token = randomHex(32);
    this.token = token;
    // Listen before spawn: the reverse order is the classic ECONNREFUSED race.
    const channel = await this.openEndpoint(token);
    // Not opened, or cancelled while the endpoint was opening: never start the process.
    if (!channel || this.decided) return this.cleanup();
    this.spawnChild(channel, token);
  }

  /**
   * Stops the agent: `cancel` over the channel, then SIGTERM to the group after the grace period,
   * then SIGKILL. The outcome is decided now (reason recorded once); the kill proceeds in the background.
   */
  stop(reason: StopReason, message: string): void {
    if (this.stopReason || this.exited) {
      if (!this.decided) this.settle({ kind: 'failure', reason, message, retryable: stopIsRetryable(reason) });
      return;
    }
    this.stopReason = reason;
    this.timers?.stop();
    if (!this.decided) this.settle({ kind: 'failure', reason, message, retryable: stopIsRetryable(reason) });
    this.sink.log('broker', `stopping: ${message}`, { kind: 'stopping', reason });
    const told = this.channel?.send({ type: 'cancel', task_id: this.settings.taskId, reason }) ?? 0;
    this.terminate(told > 0 ? this.settings.cancelGraceMs : 0);
  }

  /** Creates and opens the task endpoint, and checks the working directory. Undefined (and decided) on failure. */
  private async openEndpoint(token: string): Promise<TaskEndpoint | undefined> {
    const s = this.settings;
    const channel = this.io.endpoint(s, token, this.channelHandlers());
    this.channel = channel;
    try {
      await channel.listen();
      this.io.checkCwd(s.cwd);
      return channel;
    } catch (error) {
      const message = error instanceof SpawnError ? error.message : `could not open the task endpoint: ${(error as Error).message}`;
      this.settle({ kind: 'failure', reason: 'crashed', message, retryable: false });
      return undefined;
    }
  }

  /** What the socket channel reports, routed into this attempt. */
  private channelHandlers(): ChannelHandlers {
    const s = this.settings;
    return {
      greeting: () => [
        {
          type: 'welcome',
          task_id: s.taskId,
          attempt: s.attempt,
          protocol: PROTOCOL_VERSION,
          heartbeat_timeout_ms: s.heartbeatTimeoutMs,
          ...(s.tools && s.tools.length > 0 ? { tools: s.tools } : {}),
        },
        { type: 'input', task_id: s.taskId, data: s.input ?? null },
      ],
      payload: (payload, reply) => this.onPayload(payload, 'socket', reply),
      // A question after the decision (typically sent just as our cancel arrived) has nobody to answer it.
      ask: (message, reply) =>
        this.decided
          ? reply({ type: 'answer', task_id: s.taskId, ask_id: message.ask_id, error: 'the task has ended' })
          : this.sink.ask(message, reply),
      toolCall: (message, reply) => this.onToolCall(message, reply),
      activity: () => this.timers?.alive(),
      ...(s.traceLines ? { trace: (text: string) => this.trace('socket', text) } : {}),
      problem: (kind, detail, cause) => this.problem(kind, detail, cause),
      refused: (reason) => this.tally.refused(reason),
      acceptError: (message) => this.tally.acceptError(message),
      overflow: (detail) => this.protocolFailure(detail),
    };
  }

  /**
   * A call to the caller's tools. While one waits the agent is not stalled, it is waiting on its
   * caller: the heartbeat watchdog leaves it alone until the result is written back (see watch()).
   */
  private onToolCall(message: ToolCallMessage, reply: (message: BrokerMessage) => void): void {
    const s = this.settings;
    if (this.decided) {
      reply({ type: 'tool_result', task_id: s.taskId, call_id: message.call_id, error: 'the task has ended' });
      return;
    }
    const id = message.call_id;
    this.toolCallsWaiting.set(id, (this.toolCallsWaiting.get(id) ?? 0) + 1);
    this.sink.toolCall(message, (result) => {
      const left = (this.toolCallsWaiting.get(id) ?? 1) - 1;
      if (left > 0) this.toolCallsWaiting.set(id, left);
      else this.toolCallsWaiting.delete(id);
      // The wait is over: the agent has a full heartbeat period from now to say something again.
      this.timers?.alive();
      reply(result);
    });
  }

  /**
   * Spawns the agent with the hand-off environment, or hands the task to a spare (`AttemptSettings.spare`).
   * The process answers with 'spawn' (its pid) or 'error' (it did not start; the outcome then says
   * why), after this returns (see process/spawner.ts); a spare has its pid already.
   */
  private spawnChild(channel: TaskEndpoint, token: string): void {
    const s = this.settings;
    const handOff = { taskId: s.taskId, endpoint: channel.endpoint, token, attempt: s.attempt, heartbeatTimeoutMs: s.heartbeatTimeoutMs };
    const env = { ...s.env, ...handOffEnv({ ...handOff, spoolDir: s.spoolDir }) };
    let child: AgentProcess;
    try {
      child = s.spare?.(s, env) ?? this.io.spawn(s, env);
    } catch (error) {
      this.spawnFailed(error as NodeJS.ErrnoException);
      return;
    }
    this.child = child;
    child.once('error', (error: NodeJS.ErrnoException) => {
      // Before 'spawn': it did not start, and 'exit' will not follow. After: the spawner lost it (killed; 'exit' follows).
      if (child.pid === undefined) this.spawnFailed(error);
      else this.settle({ kind: 'failure', reason: 'crashed', message: error.message, retryable: true });
    });
    if (child.pid === undefined) child.once('spawn', () => this.spawned(child));
    else this.spawned(child);
  }

  /**
   * The agent runs: reported and watched from now (its deadline too, as when spawn returned with a
   * pid); stopped at once if the attempt was stopped while it started.
   */
  private spawned(child: AgentProcess): void {
    this.sink.spawned(child.pid!);
    this.watch(child);
    if (this.stopReason) this.terminate(0);
  }

  private spawnFailed(error: NodeJS.ErrnoException): void {
    this.settle({ kind: 'failure', reason: 'crashed', message: describeSpawnError(this.settings.command, error), retryable: false });
    void this.cleanup();
  }

  /** Reads the running agent's output, arms the deadline and heartbeat watchdogs, and waits for its exit. */
  private watch(child: AgentProcess): void {
    const s = this.settings;
    const output = this.outputHandlers();
    const streamsClosed = Promise.all([
      // A stdout line may carry attachments inline as base64 (4 characters per 3 bytes).
      readStdout(child.stdout, s.taskId, output, s.limits.maxLineBytes + Math.ceil(s.limits.maxAttachmentBytes / 3) * 4),
      readStderr(child.stderr, output, s.limits.maxLineBytes),
    ]);
    // Stopped while it started: it is being killed, there is nothing left to guard.
    if (!this.decided)
      this.timers = new AttemptTimers(
        s.timeoutMs,
        s.heartbeatTimeoutMs,
        (kind) => {
          // Waiting on the caller's tool is not a stall (as a question is not, with its heartbeats).
          if (kind === 'stalled' && this.toolCallsWaiting.size > 0) return this.timers?.alive();
          this.stop(kind, kind === 'timeout' ? `timed out after ${s.timeoutMs} ms` : `stalled: no message for ${s.heartbeatTimeoutMs} ms`);
        },
        s.watchdogFromFirstHeartbeat === true,
      );
    child.once('exit', (code, signal) => {
      this.exited = true;
      this.exitCode = code;
      this.exitSignal = signal;
      void this.afterExit(streamsClosed);
    });
  }

  /** What the stdout fallback and stderr report, routed into this attempt. */
  private outputHandlers(): OutputHandlers {
    return {
      payload: (payload: Payload) => this.onPayload(payload, 'stdout'),
      log: (stream: 'stdout' | 'stderr', text: string) => {
        this.timers?.alive();
        this.sink.log(stream, text);
      },
      problem: (kind: 'malformed' | 'rejected', detail: string, cause?: RejectCause) => this.problem(kind, detail, cause),
      overflow: (detail: string) => this.protocolFailure(detail),
      ...(this.settings.traceLines ? { trace: (text: string) => this.trace('stdout', text) } : {}),
    };
  }

  /** Notes a received line (with `traceLines`): its first 100 characters, token redacted. */
  private trace(via: 'socket' | 'stdout', text: string): void {
    this.sink.log('broker', `received via ${via}: ${traceable(text, this.token)}`, { kind: 'received', via });
  }

  /** Records a channel problem; the token never reaches a log, even inside a line that did not parse. */
  private problem(kind: 'malformed' | 'rejected', detail: string, cause?: RejectCause): void {
    // Redacted before anything keeps it: the tally's last detail becomes the failure message.
    const shown = this.token ? redactToken(detail, this.token) : detail;
    if (kind === 'malformed') this.tally.malformed(shown);
    this.sink.problem(kind, shown, cause ? { cause } : {});
  }

  private terminate(graceMs: number): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.exited) return;
    this.pendingKills.push(this.io.terminate(pid, { delayMs: graceMs, graceMs: this.settings.killGraceMs, exited: () => this.exited }));
  }

  private onPayload(payload: Payload, via: 'socket' | 'stdout', reply?: (message: BrokerMessage) => void): void {
    if (payload.status === 'heartbeat') this.timers?.heartbeat();
    this.timers?.alive();
    if (this.decided) {
      if (this.stopReason && !this.answer && this.keepAfterStop(payload, via)) {
        // A stopped agent's answer is kept: it goes with the failure (docs/protocol.md §8).
      } else if (payload.status !== 'heartbeat') {
        this.sink.problem('ignored', `${payload.status} payload via ${via} after the task was decided`, { status: payload.status });
      }
      // Still acknowledge a late final (typically the agent's answer to our cancel): the ack tells
      // the agent it may exit now, instead of waiting for one and spooling.
      if (isFinalStatus(payload.status)) this.ack(payload.status, reply);
      return;
    }
    if (isFinalStatus(payload.status)) {
      const final = payload as FinalPayload;
      this.settle({ kind: 'final', payload: final, channel: via });
      this.ack(final.status, reply);
      // The agent should exit after its final payload; one that lingers (a CLI that never exits) is stopped.
      this.terminate(this.settings.cancelGraceMs);
      return;
    }
    if (payload.status === 'partial') this.sink.partial(payload);
  }

  /**
   * After a stop, the agent's first final payload is its answer (`answer`), kept with the failure.
   * False for what is not kept: partials and usage after the stop (the snapshot keeps those at the stop).
   */
  private keepAfterStop(payload: Payload, via: 'socket' | 'stdout'): boolean {
    if (!isFinalStatus(payload.status)) return false;
    this.answer = { payload: payload as FinalPayload, channel: via };
    if (payload.status === 'cancelled') this.sink.log('broker', 'the agent confirmed the cancel', { kind: 'cancel-confirmed' });
    else
      this.sink.log('broker', `the agent answered the stop with ${payload.status}; kept with the failure`, {
        kind: 'stop-answered',
        status: payload.status,
      });
    return true;
  }

  private protocolFailure(detail: string): void {
    this.sink.log('broker', `protocol error: ${detail}`, { kind: 'protocol-error', detail });
    if (this.decided) return;
    this.settle({ kind: 'failure', reason: 'protocol', message: `protocol error: ${detail}`, detail, retryable: false });
    this.channel?.send({ type: 'cancel', task_id: this.settings.taskId, reason: 'protocol' });
    this.terminate(this.settings.cancelGraceMs);
  }

  private settle(outcome: AttemptOutcome): void {
    if (this.decided) return;
    this.decided = outcome;
    this.timers?.stop();
    this.decide(outcome);
  }

  private async afterExit(streamsClosed: Promise<unknown>): Promise<void> {
    const s = this.settings;
    const channel = this.channel!;
    // Output the agent wrote just before exiting is still in the pipes and the socket: drain it, but
    // do not wait forever on pipes a grandchild keeps open. The socket is read for as long as it
    // keeps delivering (see drained()): what it holds may be many lines a busy broker reads slowly.
    const drainCap = delay(s.drainMs);
    await Promise.all([Promise.race([streamsClosed, drainCap.elapsed]), channel.drained(s.drainMs)]);
    // Cleared, not left to run out: a pending timer kept a CLI process (`run --local`) alive for a second after its task.
    drainCap.cancel();
    if (!this.decided || (this.stopReason && !this.answer)) {
      // Socket and stdout both failed, but the agent spooled its result (the SDK's last resort).
      const spooled = readSpooled(s.spoolDir, s.taskId);
      // Its file stays until that result is durable (acknowledge()): a hub killed meanwhile adopts it again.
      this.spoolTaken = spooled !== undefined;
      if (spooled && this.decided) this.answer = { payload: spooled, channel: 'spool' };
      else if (spooled) this.settle({ kind: 'final', payload: spooled, channel: 'spool' });
    }
    if (!this.decided) {
      const how = this.exitSignal ? `was killed by ${this.exitSignal}` : `exited with code ${this.exitCode}`;
      const message = `the agent ${how} without sending a final payload${this.tally.describe()}`;
      this.settle({ kind: 'failure', reason: 'crashed', message, retryable: true });
    }
    await this.cleanup();
  }

  private async cleanup(): Promise<void> {
    for (const cancel of this.pendingKills) cancel();
    this.timers?.stop();
    const pid = this.child?.pid;
    if (pid !== undefined && this.io.reap(pid) === true) this.sink.log('broker', LEFTOVER_PROCESSES, { kind: 'leftover-processes' });
    this.child?.stdout.destroy();
    this.child?.stderr.destroy();
    // An agent whose ack came late spools a result we already have: the file must not pile up.
    if (!this.spoolTaken || this.heldAcks === undefined) removeSpoolFile(spoolPath(this.settings.spoolDir, this.settings.taskId));
    await this.channel?.close();
    this.finish();
  }
}

/** Logged (with the `leftover-processes` event) when the agent's process group outlived it. */
export const LEFTOVER_PROCESSES = 'the agent left processes running in its process group; killed them';

/** Resolves `elapsed` after `ms`; `cancel` clears the timer (and leaves `elapsed` pending). */
function delay(ms: number): { elapsed: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return { elapsed, cancel: () => clearTimeout(timer) };
}
