/**
 * The agent's view of its task: input, progress, cancellation, questions, calls to the tools its
 * caller hosts, and the one final payload.
 */
import {
  HAND_OFF_VARIABLES,
  STDOUT_PREFIX,
  inlined,
  isAttachmentName,
  isoNow,
  outgoingAttachment,
  type ApprovalContext,
  type AttachmentValue,
  type OutgoingAttachment,
  type BrokerMessage,
  type FinalStatus,
  type OfferedTool,
  type Payload,
  type PayloadMeta,
} from '../protocol/index.js';
import { writeSpooledLazily } from '../protocol/spool.js';
import { connectWithRetry, MessageLink, type ConnectOptions } from './connection.js';
import { AgentRuntimeError, locateTask, type TaskLocation } from './locate.js';

export interface ConnectTaskOptions extends ConnectOptions {
  argv?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the broker's ack of the final payload before spooling it. @default 5000 */
  ackTimeoutMs?: number;
  /** Override the heartbeat interval the broker asked for (0 = none). */
  heartbeatMs?: number;
  /** Agent description sent in `hello`. */
  agent?: string;
  /** Keep CURSOR_TASK_ID, CURSOR_IPC_PATH, CURSOR_IPC_TOKEN… in the environment for child processes. @default false */
  keepHandOffEnv?: boolean;
}

export interface AskOptions {
  choices?: string[];
  /** The question is an approval of a tool call (the ACP adapter's; docs/acp.md): shown beside the question. */
  approval?: ApprovalContext;
  /** Called, before `ask` resolves, with the door the answer came through (cli, panel, mcp, notification, control). */
  answeredVia?: (door: string) => void;
  /** Give up after this long (the broker also has its own limit). */
  timeoutMs?: number;
}

export interface CallToolOptions {
  /** Aborting gives up on the call: `callTool` rejects with an AgentRuntimeError (the caller may still answer; it is ignored). */
  signal?: AbortSignal;
  /** Give up after this many milliseconds (rejects with an AgentRuntimeError). @default no limit */
  timeout?: number;
}

/** Thrown into the handler's `signal` when the broker cancels (timeout, stall, user). */
export class TaskCancelledError extends Error {
  override readonly name = 'AbortError';
  constructor(readonly reason: string) {
    super(`task cancelled: ${reason}`);
  }
}

export class AgentTask<Input = unknown> {
  readonly id: string;
  readonly attempt: number;
  /** The task's input (any JSON value; null when none, or in stdout mode). */
  input: Input = null as Input;
  /**
   * The tools the task's caller hosts, offered in the broker's welcome (docs/protocol.md §6.1): call one
   * with `callTool`. Empty when none were offered (or in stdout mode).
   */
  tools: readonly OfferedTool[] = [];
  /** Fires when the broker cancels this task. Pass it to fetch(), child processes, loops. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly extraMeta: PayloadMeta = {};
  /** process.hrtime, not performance.now(): the first performance.now() loads perf_hooks (≈ 1 ms of every start). */
  private readonly startedAt = process.hrtime.bigint();
  private link: MessageLink | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private finalSent = false;
  private ackWaiter: ((acked: boolean) => void) | undefined;
  private readonly asks = new Map<string, { resolve: (answer: string, via?: string) => void; reject: (error: Error) => void }>();
  private askCounter = 0;
  private readonly toolCalls = new Map<string, { name: string; resolve: (content: unknown) => void; reject: (error: Error) => void }>();
  private toolCallCounter = 0;
  private watchingClose = false;
  private readonly attachments: OutgoingAttachment[] = [];
  private inputReady: Promise<void> = Promise.resolve();

  private constructor(
    private readonly location: TaskLocation,
    private readonly options: ConnectTaskOptions,
  ) {
    this.id = location.taskId;
    this.attempt = location.attempt;
    this.signal = this.controller.signal;
  }

  /** Locates and connects to the task; falls back to stdout when there is no usable socket. */
  static async connect<Input = unknown>(options: ConnectTaskOptions = {}): Promise<AgentTask<Input>> {
    survivePipeErrors();
    const env = options.env ?? process.env;
    const task = new AgentTask<Input>(locateTask(options.argv, env), options);
    // Like VS Code's hand-off: read once, then remove, so processes this agent starts do not inherit
    // the token and report to (or impersonate) this task by accident.
    if (!options.keepHandOffEnv) for (const name of HAND_OFF_VARIABLES) delete env[name];
    await task.open();
    return task;
  }

  /** `socket` normally; `stdout` when the agent reports through `data:` lines instead. */
  get channel(): 'socket' | 'stdout' {
    return this.link && !this.link.closed ? 'socket' : 'stdout';
  }

  private async open(): Promise<void> {
    const { ipcPath, token } = this.location;
    if (ipcPath && token) {
      try {
        const socket = await connectWithRetry(ipcPath, this.options);
        let gotInput!: () => void;
        this.inputReady = new Promise((resolve) => (gotInput = resolve));
        this.link = new MessageLink(socket, (message) => this.onMessage(message, gotInput));
        // Written at once, not on the next tick: the broker's welcome + input is what the agent waits for.
        void this.link.sendNow({ type: 'hello', task_id: this.id, token, agent: this.options.agent ?? 'backchannel-agent-runtime/1' });
        // The broker answers with welcome + input right away; a dead link must not hang us here.
        await Promise.race([this.inputReady, this.link.whenClosed()]);
      } catch (error) {
        this.warn(`cannot reach the broker at ${ipcPath} (${(error as Error).message}); reporting on stdout instead`);
        this.link = undefined;
      }
    }
    const heartbeatMs = this.options.heartbeatMs ?? this.location.heartbeatMs ?? 0;
    if (heartbeatMs > 0) {
      this.heartbeatTimer = setInterval(() => this.send({ task_id: this.id, status: 'heartbeat' }), heartbeatMs);
      this.heartbeatTimer.unref();
    }
  }

  private onMessage(message: BrokerMessage, gotInput: () => void): void {
    switch (message.type) {
      case 'welcome':
        if (Array.isArray(message.tools)) this.tools = Object.freeze(message.tools.slice());
        return;
      case 'input':
        this.input = message.data as Input;
        gotInput();
        return;
      case 'cancel':
        if (this.signal.aborted) return;
        this.controller.abort(new TaskCancelledError(message.reason));
        // Questions still waiting get no answer now (one pass here, not an abort listener per question).
        for (const pending of [...this.asks.values()]) pending.reject(this.signal.reason as Error);
        for (const pending of [...this.toolCalls.values()]) pending.reject(this.signal.reason as Error);
        return;
      case 'ack':
        this.ackWaiter?.(true);
        return;
      case 'answer': {
        const pending = this.asks.get(message.ask_id);
        if (!pending) return;
        this.asks.delete(message.ask_id);
        if (message.error !== undefined || message.answer === undefined)
          pending.reject(new AgentRuntimeError(`no answer: ${message.error ?? 'empty answer'}`));
        else pending.resolve(message.answer, message.via);
        return;
      }
      case 'tool_result': {
        const pending = this.toolCalls.get(message.call_id);
        if (!pending) return;
        if (message.error !== undefined) pending.reject(new AgentRuntimeError(`tool call ${pending.name} failed: ${message.error}`));
        else pending.resolve(message.content);
        return;
      }
      case 'reject':
        this.warn(`the broker rejected this connection: ${message.reason}`);
        return;
      default:
        return;
    }
  }

  /** Reports progress: `percent` (0–100, or undefined for indeterminate) plus any data (and `meta`, as `partial`). */
  progress(percent: number | undefined, data: Record<string, unknown> = {}, meta?: PayloadMeta): void {
    this.partial(percent === undefined ? data : { ...data, progress: percent }, meta);
  }

  /**
   * Sends a `partial` payload with arbitrary data. `meta.token_usage` ({input, output}: the run's
   * total so far) and `meta.cost_usd` report what the run has spent: the broker shows it live and
   * stops the task when it is over its budget (docs/writing-sub-agents.md, "Budgets").
   */
  partial(data: unknown, meta?: PayloadMeta): void {
    this.send(meta === undefined ? { task_id: this.id, status: 'partial', data } : { task_id: this.id, status: 'partial', data, meta });
  }

  heartbeat(): void {
    this.send({ task_id: this.id, status: 'heartbeat' });
  }

  /** Adds fields to the final payload's meta (e.g. `model_used`, `token_usage`). */
  meta(fields: PayloadMeta): void {
    Object.assign(this.extraMeta, fields);
  }

  /**
   * Attaches a big value to the final payload, sent beside its JSON line at wire speed: a string
   * comes back to the caller as a string (UTF-8), bytes as a Buffer. Keep `data` small and put the
   * bulk here (docs/protocol.md §4.1). On the stdout fallback it travels as base64 (slower, whole).
   */
  attach(name: string, value: AttachmentValue): void {
    if (this.finalSent) throw new AgentRuntimeError('attach() after the final payload was sent');
    if (!isAttachmentName(name)) throw new AgentRuntimeError(`attachment name ${JSON.stringify(name)} is not a plain file name`);
    if (typeof value !== 'string' && !(value instanceof Uint8Array)) throw new AgentRuntimeError('attach() takes a string or bytes');
    const index = this.attachments.findIndex((a) => a.header.name === name);
    const attachment = outgoingAttachment(name, value);
    if (index === -1) this.attachments.push(attachment);
    else this.attachments[index] = attachment;
  }

  /**
   * Waits `ms` milliseconds (heartbeats go on); rejects with the cancel (a TaskCancelledError, the
   * signal's reason) as soon as the task is cancelled. Between steps, `task.signal.throwIfAborted()`
   * does the same without waiting.
   */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) return reject(this.signal.reason as Error);
      const onCancel = () => {
        clearTimeout(timer);
        reject(this.signal.reason as Error);
      };
      const timer = setTimeout(
        () => {
          this.signal.removeEventListener('abort', onCancel);
          resolve();
        },
        Math.max(0, ms),
      );
      this.signal.addEventListener('abort', onCancel, { once: true });
    });
  }

  /** A line in the task's log (stderr, which the broker keeps). */
  log(text: string): void {
    process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Asks the person a question; resolves with the answer. Needs the socket channel. */
  ask(question: string, options: AskOptions = {}): Promise<string> {
    const link = this.link;
    if (!link || link.closed) return Promise.reject(new AgentRuntimeError('cannot ask: no connection to the broker (stdout mode)'));
    const askId = `q${++this.askCounter}`;
    return new Promise<string>((resolve, reject) => {
      const timer = options.timeoutMs
        ? setTimeout(() => fail(new AgentRuntimeError(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs)
        : undefined;
      const done = () => {
        clearTimeout(timer);
        this.asks.delete(askId);
      };
      const fail = (error: Error) => {
        done();
        reject(error);
      };
      this.asks.set(askId, {
        resolve: (answer, via) => {
          done();
          options.answeredVia?.(via ?? 'control');
          resolve(answer);
        },
        reject: fail,
      });
      // Written at once: nothing is coalesced with a question, and the agent waits for its answer.
      void link.sendNow({
        type: 'ask',
        task_id: this.id,
        ask_id: askId,
        question,
        ...(options.choices ? { choices: options.choices } : {}),
        ...(options.approval ? { approval: options.approval } : {}),
      });
    });
  }

  /**
   * Calls `name`, one of the tools the task's caller hosts (`task.tools`), with `args`; resolves with
   * what the tool returned (any JSON, usually a string). Rejects with an AgentRuntimeError when the
   * caller answers with an error (a tool that failed, or was not offered), on `signal`, on `timeout`,
   * and with the cancel when the task is cancelled. Several calls may be in flight at once. While a
   * call waits, the broker's watchdog leaves the task alone. Needs the socket channel.
   */
  callTool(name: string, args: Record<string, unknown> = {}, options: CallToolOptions = {}): Promise<unknown> {
    const link = this.link;
    if (!link || link.closed) return Promise.reject(new AgentRuntimeError('cannot call a tool: no connection to the broker (stdout mode)'));
    if (typeof name !== 'string' || name === '') return Promise.reject(new AgentRuntimeError('callTool() needs a tool name'));
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return Promise.reject(new AgentRuntimeError('callTool() takes its arguments as an object'));
    }
    if (this.signal.aborted) return Promise.reject(this.signal.reason as Error);
    const { signal, timeout } = options;
    if (signal?.aborted) return Promise.reject(new AgentRuntimeError(`tool call ${name} aborted`, { cause: signal.reason }));
    const callId = `call_${++this.toolCallCounter}`;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => fail(new AgentRuntimeError(`tool call ${name} aborted`, { cause: signal?.reason }));
      const timer =
        timeout !== undefined && timeout > 0
          ? setTimeout(() => fail(new AgentRuntimeError(`tool call ${name} got no result within ${timeout} ms`)), timeout)
          : undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.toolCalls.delete(callId);
      };
      const fail = (error: Error) => {
        done();
        reject(error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.toolCalls.set(callId, {
        name,
        resolve: (content) => {
          done();
          resolve(content);
        },
        reject: fail,
      });
      // Written at once: the agent waits for the result.
      void link.sendNow({ type: 'tool_call', task_id: this.id, call_id: callId, name, arguments: args });
      this.failToolCallsOnClose(link);
    });
  }

  /** A broker that goes away never answers: the calls waiting then fail rather than wait forever (one watch per link). */
  private failToolCallsOnClose(link: MessageLink): void {
    if (this.watchingClose) return;
    this.watchingClose = true;
    void link.whenClosed().then(() => {
      for (const pending of [...this.toolCalls.values()])
        pending.reject(new AgentRuntimeError('tool call: the connection to the broker closed'));
    });
  }

  succeed(data: unknown, meta: PayloadMeta = {}): Promise<void> {
    return this.finish('success', data, meta);
  }

  /** Sends an `error` final payload. `retryable: false` tells the broker not to try again. */
  fail(error: unknown, options: { retryable?: boolean; data?: Record<string, unknown> } = {}): Promise<void> {
    const err = error instanceof Error ? error : new Error(String(error));
    const retryable = options.retryable ?? (err as { retryable?: boolean }).retryable;
    // An error may carry structured details (`error.data`, e.g. an exit code or a session id).
    const details = (err as { data?: unknown }).data;
    const extra = details && typeof details === 'object' && !Array.isArray(details) ? details : {};
    return this.finish('error', { message: err.message, name: err.name, ...extra, ...options.data }, {}, retryable);
  }

  cancelled(data: unknown = { message: String((this.signal.reason as Error | undefined)?.message ?? 'cancelled') }): Promise<void> {
    return this.finish('cancelled', data, {});
  }

  /** Stops heartbeats and closes the connection. */
  async close(): Promise<void> {
    clearInterval(this.heartbeatTimer);
    await this.link?.end();
  }

  private send(payload: Payload): void {
    if (this.finalSent) return;
    if (this.link && !this.link.closed) this.link.send(payload);
    else void printToStdout(payload);
  }

  /**
   * Sends the one final payload and makes sure it lands: over the socket with the broker's ack;
   * without an ack, as a `data:` line on stdout and as a spool file the next broker adopts.
   */
  private async finish(status: FinalStatus, data: unknown, meta: PayloadMeta, retryable?: boolean): Promise<void> {
    if (this.finalSent) throw new AgentRuntimeError('a final payload was already sent for this task');
    this.finalSent = true;
    clearInterval(this.heartbeatTimer);
    const payload: Payload = {
      task_id: this.id,
      status,
      data,
      meta: { timestamp: isoNow(), duration_ms: elapsedMs(this.startedAt), ...this.extraMeta, ...meta },
    };
    if (retryable !== undefined) payload.retryable = retryable;
    const attachments = this.attachments;
    const link = this.link;
    if (link && !link.closed) {
      // Written first, the ack's wait armed after in the same turn (an ack cannot come sooner): the
      // first timer of a process costs ≈ 0.3 ms that the result need not wait for.
      const written =
        attachments.length === 0
          ? link.sendNow(payload)
          : link.sendNow(
              { ...payload, attachments: attachments.map((a) => a.header) },
              attachments.map((a) => a.bytes),
            );
      const acked = new Promise<boolean>((resolve) => {
        this.ackWaiter = resolve;
        const timer = setTimeout(() => resolve(false), this.options.ackTimeoutMs ?? 5000);
        timer.unref();
        void link.whenClosed().then(() => resolve(false));
      });
      await written;
      if (await acked) return;
      this.warn('no acknowledgement from the broker; writing the result to stdout and the spool');
    }
    // Where raw bytes cannot follow a line, the attachments travel inline (base64).
    const whole = attachments.length === 0 ? payload : { ...payload, attachments: attachments.map(inlined) };
    await this.spool(whole);
    await printToStdout(whole);
  }

  private async spool(payload: Payload): Promise<void> {
    const dir = this.location.spoolDir;
    if (!dir) return;
    try {
      await writeSpooledLazily(dir, payload);
    } catch (error) {
      this.warn(`cannot write the spool file: ${(error as Error).message}`);
    }
  }

  private warn(text: string): void {
    process.stderr.write(`[backchannel] ${text}\n`);
  }
}

/** Whole milliseconds since `start` (a process.hrtime.bigint() value). */
function elapsedMs(start: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - start) / 1e6);
}

/**
 * The agent's stdout and stderr are pipes the broker reads. When the broker dies (SIGKILL), the
 * next write to them fails with EPIPE, and a stream error nobody listens to is an uncaught
 * exception: the agent died at its next progress, heartbeat or log line, before it could finish and
 * spool its result. A broken output stream only loses that channel: the result still reaches the
 * spool file, which the next broker adopts. Installed once, for the streams of the whole process (an
 * agent's own console.log() is saved with them); the socket has its own handler (MessageLink).
 */
export function survivePipeErrors(): void {
  for (const name of ['stdout', 'stderr'] as const) guardWhenUsed(name);
}

/** Stdio pipes made before the guard was set (an early console.log: the console keeps its stream and never asks again). */
function madeAlready(): NodeJS.WritableStream[] {
  const handles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
  return handles.filter((h): h is NodeJS.WritableStream & { fd: number } => {
    const fd = (h as { fd?: unknown }).fd;
    return (fd === 1 || fd === 2) && typeof (h as { on?: unknown }).on === 'function';
  });
}
const guarded = new WeakSet<NodeJS.WritableStream>();
const watched = new Set<string>();

function guard(stream: NodeJS.WritableStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on('error', () => {
    // The reader is gone (EPIPE) or the stream was closed: writes from now on go nowhere.
  });
}

/**
 * Guards `process[name]` once something uses it. Node makes the stream on first access; making
 * both at every start (two pipe sockets) was ~2 ms of every agent's CPU, and an agent that reports
 * only over the socket never writes to them. The getter is wrapped once: its first call makes the
 * stream, guards it and puts Node's own getter back.
 */
function guardWhenUsed(name: 'stdout' | 'stderr'): void {
  if (watched.has(name)) return;
  watched.add(name);
  if (watched.size === 1) for (const stream of madeAlready()) guard(stream);
  const own = Object.getOwnPropertyDescriptor(process, name);
  const get = own?.get;
  if (!own || !get || !own.configurable) return guard(process[name]);
  Object.defineProperty(process, name, {
    ...own,
    get() {
      const stream = get.call(process) as NodeJS.WritableStream;
      Object.defineProperty(process, name, own);
      guard(stream);
      return stream;
    },
  });
}

/** Writes a payload as an SSE-style `data:` line (plus the blank line); resolves when written (or when stdout is gone). */
export function printToStdout(payload: Payload): Promise<void> {
  survivePipeErrors();
  return new Promise((resolve) => {
    const ok = process.stdout.write(`${STDOUT_PREFIX}${JSON.stringify(payload)}\n\n`, () => resolve());
    if (!ok && process.stdout.destroyed) resolve();
  });
}
