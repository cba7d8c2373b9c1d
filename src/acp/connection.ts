/**
 * The ACP connection to the agent child, through the official SDK's client side (stable v1): the
 * handlers Backchannel serves (updates, permissions, fs, terminal when allowed), the NDJSON stream
 * with a bounded message size, and the handshake: `initialize` (bounded wait), then `authenticate`
 * when the agent asks for it and offers a method.
 */
import { Readable, Writable } from 'node:stream';
import {
  PROTOCOL_VERSION,
  client,
  methods,
  ndJsonStream,
  type AnyMessage,
  type ClientConnection,
  type InitializeResponse,
} from '@agentclientprotocol/sdk';
import { describeExit, type AgentProcess } from './agent-process.js';
import type { Approvals } from './approvals.js';
import type { FsService } from './fs-service.js';
import type { TerminalService } from './terminal-service.js';

/** The largest message taken from the agent: a 10 MiB write plus its JSON-RPC envelope and escaping. */
export const MAX_MESSAGE_BYTES = 11 * 1024 * 1024;

/** How the SDK's refusal of a line it could not take (not JSON, not JSON-RPC) starts on the wire. */
const REFUSAL_PREFIX = Buffer.from('{"jsonrpc":"2.0","id":null,"error":');

/**
 * The agent's stdin, counting the SDK's refusals of malformed lines as they are written back: the
 * SDK answers each with a JSON-RPC error (id null) and goes on, and the task records how many.
 */
function countingRefusals(inner: WritableStream<Uint8Array>, onRefusal: () => void): WritableStream<Uint8Array> {
  const writer = inner.getWriter();
  return new WritableStream<Uint8Array>({
    write(chunk) {
      const head = Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.byteLength, REFUSAL_PREFIX.length));
      if (head.equals(REFUSAL_PREFIX)) onRefusal();
      return writer.write(chunk);
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
}

/** ACP v1's update kinds: the SDK's schema refuses any other, so others are counted and dropped before it. */
const KNOWN_UPDATES = new Set([
  'user_message_chunk',
  'agent_message_chunk',
  'agent_thought_chunk',
  'tool_call',
  'tool_call_update',
  'plan',
  'available_commands_update',
  'current_mode_update',
  'config_option_update',
  'session_info_update',
  'usage_update',
  'notice',
  'compaction_update',
  'compaction_summary_chunk',
]);

/** The update kind of a `session/update` message, or undefined for any other message. */
function updateKind(message: AnyMessage): unknown {
  if (!('method' in message) || message.method !== methods.client.session.update) return undefined;
  const params = (message as { params?: unknown }).params;
  const update = typeof params === 'object' && params !== null ? (params as { update?: unknown }).update : undefined;
  return typeof update === 'object' && update !== null ? (update as { sessionUpdate?: unknown }).sessionUpdate : null;
}

/**
 * A `usage_update` without a numeric `used` (claude-agent-acp 0.23.1 sends `"used": null` with the
 * session's cost), which the SDK's schema would refuse and drop, cost included: its params as they are.
 */
function looseUsage(message: AnyMessage): { sessionId: unknown; update: unknown } | undefined {
  if (updateKind(message) !== 'usage_update') return undefined;
  const params = (message as { params: { sessionId?: unknown; update: { used?: unknown } } }).params;
  return typeof params.update.used === 'number' ? undefined : { sessionId: params.sessionId, update: params.update };
}

/**
 * The agent's messages, less `session/update`s of a kind ACP does not define (each reported to
 * `onUnknown`) and loose usage updates (given to `onUsage` directly: work.ts checks every field).
 */
function droppingUnknownUpdates(
  readable: ReadableStream<AnyMessage>,
  onUnknown: () => void,
  onUsage: (sessionId: unknown, update: unknown) => void,
): ReadableStream<AnyMessage> {
  return readable.pipeThrough(
    new TransformStream<AnyMessage, AnyMessage>({
      transform(message, controller) {
        const kind = updateKind(message);
        const loose = looseUsage(message);
        if (kind !== undefined && !(typeof kind === 'string' && KNOWN_UPDATES.has(kind))) onUnknown();
        else if (loose) onUsage(loose.sessionId, loose.update);
        else controller.enqueue(message);
      },
    }),
  );
}

export interface Services {
  /** One `session/update`, unparsed (updates.ts trusts nothing). */
  onUpdate(sessionId: unknown, update: unknown): void;
  /** The agent sent a line that is not a JSON-RPC message (the SDK refused it and went on). */
  onMalformed(): void;
  /** The agent sent an update of a kind ACP does not define (dropped). */
  onUnknownUpdate(): void;
  approvals: Approvals;
  fs: FsService;
  terminal?: TerminalService;
}

/** The adapter's failure: a message for people, its data (the work so far) added by the caller. */
export class AcpError extends Error {
  override readonly name = 'AcpError';
  constructor(
    message: string,
    readonly code: 'init_timeout' | 'agent_exit' | 'protocol' | 'refusal' | 'agent_error' | 'budget_exceeded' | 'settings' = 'protocol',
  ) {
    super(message);
  }
}

export function connectAgent(agent: AgentProcess, services: Services): ClientConnection {
  const app = client({ name: 'backchannel' })
    .onRequest(methods.client.session.requestPermission, ({ params, signal }) => services.approvals.permission(params, signal))
    .onRequest(methods.client.fs.readTextFile, ({ params }) => services.fs.read(params))
    .onRequest(methods.client.fs.writeTextFile, ({ params, signal }) => services.fs.write(params, signal));
  const terminal = services.terminal;
  if (terminal) {
    app
      .onRequest(methods.client.terminal.create, ({ params, signal }) => terminal.create(params, signal))
      .onRequest(methods.client.terminal.output, ({ params }) => terminal.output(params.terminalId))
      .onRequest(methods.client.terminal.waitForExit, ({ params }) => terminal.waitForExit(params.terminalId))
      .onRequest(methods.client.terminal.kill, ({ params }) => terminal.kill(params.terminalId))
      .onRequest(methods.client.terminal.release, ({ params }) => terminal.release(params.terminalId));
  }
  const stream = ndJsonStream(
    countingRefusals(Writable.toWeb(agent.child.stdin) as WritableStream<Uint8Array>, () => services.onMalformed()),
    Readable.toWeb(agent.child.stdout) as ReadableStream<Uint8Array>,
    { maxMessageBytes: MAX_MESSAGE_BYTES },
  );
  return app.connect({
    writable: stream.writable,
    readable: droppingUnknownUpdates(
      stream.readable,
      () => services.onUnknownUpdate(),
      (sessionId, update) => services.onUpdate(sessionId, update),
    ),
  });
}

/** Rejects with `message` after `ms`, or with the agent's exit, whichever comes first; `work` wins if sooner. */
export async function bounded<T>(work: Promise<T>, ms: number, message: string, agent: AgentProcess): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AcpError(message, 'init_timeout')), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } catch (error) {
    throw await explain(error, agent);
  } finally {
    clearTimeout(timer);
  }
}

/** An SDK error as the task reads it: the agent's exit, an oversized message, or the JSON-RPC error's message. */
export async function explain(error: unknown, agent: AgentProcess, during = 'before the session started'): Promise<AcpError> {
  if (error instanceof AcpError) return error;
  const e = error as { name?: string; message?: string; code?: number };
  if (e.name === 'MessageTooLargeError') {
    return new AcpError(`the ACP agent sent a message over the ${MAX_MESSAGE_BYTES / (1024 * 1024)} MiB limit`, 'protocol');
  }
  // A closed connection is usually the agent's exit: give the exit a moment to be reported.
  const exit = agent.exit() ?? (await Promise.race([agent.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 500))]));
  if (exit) return new AcpError(`the ACP agent exited (${describeExit(exit)}) ${during}`, 'agent_exit');
  const text = (e.message ?? String(error)).split('\n')[0]!.slice(0, 300);
  return new AcpError(`the ACP agent answered with an error: ${text}`, 'agent_error');
}

export interface Handshake {
  init: InitializeResponse;
}

/** initialize (bounded), then authenticate when the agent offers a method and says it needs one. */
export async function handshake(
  connection: ClientConnection,
  agent: AgentProcess,
  terminal: boolean,
  initTimeoutMs: number,
): Promise<Handshake> {
  const init = await bounded(
    connection.agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal },
      clientInfo: { name: 'backchannel', version: '1' },
    }),
    initTimeoutMs,
    `the ACP agent did not answer initialize within ${initTimeoutMs} ms`,
    agent,
  );
  return { init };
}

/** The auth method to use when a session needs one: an API-key or environment method, else the first. */
export function authMethodOf(init: InitializeResponse): string | undefined {
  const auth = init.authMethods ?? [];
  const preferred = auth.find((m) => /api[-_ ]?key|env/i.test(`${m.id} ${m.name}`));
  return (preferred ?? auth[0])?.id;
}
