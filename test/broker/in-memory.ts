/**
 * In-memory stand-ins for an attempt's outside world (the way vscode-jsonrpc tests over an
 * in-memory duplex): a fake endpoint whose "agent" the test drives, and a fake child process.
 * No sockets, no processes: the Attempt's decisions alone.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type { AskMessage, BrokerMessage, FinalPayload, Payload, ToolCallMessage } from '../../src/protocol/index.js';
import type { AttemptIO, AttemptSettings, AttemptSink } from '../../src/broker/task/attempt.js';
import type { ChannelHandlers } from '../../src/broker/transport/channel.js';
import { DEFAULT_CHANNEL_LIMITS } from '../../src/broker/transport/channel.js';
import type { TaskEndpoint } from '../../src/broker/transport/task-endpoint.js';
import type { TerminateOptions } from '../../src/base/kill-tree.js';
import type { LogEvent } from '../../src/model/task.js';
import type { AgentProcess } from '../../src/broker/process/spawn-agent.js';

export const TASK_ID = 'task-under-test';

export class FakeEndpoint implements TaskEndpoint {
  readonly endpoint = 'memory://endpoint';
  /** Messages the broker sent to the agent (broadcasts and replies). */
  readonly sent: BrokerMessage[] = [];
  /** Authenticated connections a broadcast reaches. */
  connections = 1;
  closed = false;

  constructor(readonly handlers: ChannelHandlers) {}

  async listen(): Promise<void> {}
  send(message: BrokerMessage): number {
    if (this.connections > 0) this.sent.push(message);
    return this.connections;
  }
  async drained(): Promise<void> {}
  async close(): Promise<void> {
    this.closed = true;
  }

  /** The agent sends a payload over the socket. */
  agentSends(payload: Payload): void {
    this.handlers.activity();
    this.handlers.payload(payload, (reply) => this.sent.push(reply));
  }

  /** The agent calls a tool its caller hosts over the socket. */
  agentCallsTool(message: ToolCallMessage): void {
    this.handlers.activity();
    this.handlers.toolCall(message, (reply) => this.sent.push(reply));
  }

  /** The agent asks a question over the socket. */
  agentAsks(message: AskMessage): void {
    this.handlers.activity();
    this.handlers.ask(message, (reply) => this.sent.push(reply));
  }
}

export class FakeChild extends EventEmitter {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  constructor(readonly pid: number | undefined = 4242) {
    super();
  }
  /** The process exits: its pipes close, then 'exit'. */
  exit(code: number | null, signal: NodeJS.Signals | null = null): void {
    this.stdout.end();
    this.stderr.end();
    this.emit('exit', code, signal);
  }
}

export interface Recorded {
  endpoint?: FakeEndpoint;
  child?: FakeChild;
  terminations: Array<{ pid: number; options: TerminateOptions }>;
  reaped: number[];
  partials: Payload[];
  /** Questions the attempt passed on to the broker. */
  asks: AskMessage[];
  /** Tool calls the attempt passed on to the broker, each with the way to send its result back. */
  toolCalls: Array<{ message: ToolCallMessage; reply: (message: BrokerMessage) => void }>;
  logs: string[];
  /** The events of the broker's notes, in order. */
  events: LogEvent[];
  /** Each problem with its facts (cause, status), when it has some. */
  problems: Array<{ kind: string; detail: string; cause?: string; status?: string }>;
}

export function fakeWorld(childPid?: number): { io: AttemptIO; sink: AttemptSink; recorded: Recorded } {
  const recorded: Recorded = { terminations: [], reaped: [], partials: [], asks: [], toolCalls: [], logs: [], events: [], problems: [] };
  const io: AttemptIO = {
    endpoint: (_settings, _token, handlers) => (recorded.endpoint = new FakeEndpoint(handlers)),
    checkCwd: () => {},
    spawn: () => (recorded.child = new FakeChild(childPid)) as unknown as AgentProcess,
    terminate: (pid, options) => {
      recorded.terminations.push({ pid, options });
      return () => {};
    },
    reap: (pid) => recorded.reaped.push(pid),
  };
  const sink: AttemptSink = {
    partial: (payload) => recorded.partials.push(payload),
    log: (stream, text, event) => {
      recorded.logs.push(`${stream}: ${text}`);
      if (event) recorded.events.push(event);
    },
    problem: (kind, detail, facts) => recorded.problems.push({ kind, detail, ...facts }),
    ask: (message) => recorded.asks.push(message),
    toolCall: (message, reply) => recorded.toolCalls.push({ message, reply }),
    spawned: () => {},
  };
  return { io, sink, recorded };
}

export function settings(overrides: Partial<AttemptSettings> = {}): AttemptSettings {
  return {
    taskId: TASK_ID,
    attempt: 1,
    command: 'agent',
    args: [],
    cwd: '/',
    env: {},
    input: null,
    timeoutMs: 0,
    heartbeatTimeoutMs: 0,
    endpointDir: '/nonexistent',
    spoolDir: '/nonexistent',
    limits: DEFAULT_CHANNEL_LIMITS,
    cancelGraceMs: 3000,
    killGraceMs: 1000,
    drainMs: 20,
    traceLines: false,
    ...overrides,
  };
}

export function final(status: FinalPayload['status'], data: unknown = null, extra: Partial<FinalPayload> = {}): FinalPayload {
  return { task_id: TASK_ID, status, data, ...extra };
}
