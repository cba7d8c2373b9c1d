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

/** The params of a `session/update` notification, or undefined for any other message. */
function updateParams(message: AnyMessage): { sessionId?: unknown; update?: unknown } | undefined {
  if (!('method' in message) || message.method !== methods.client.session.update || 'id' in message) return undefined;
  const params = (message as { params?: unknown }).params;
  return typeof params === 'object' && params !== null ? params : {};
}

/**
 * The agent's messages, every `session/update` taken out and handed to `onUpdate` in arrival order
 * (before the answer that follows them). Work.apply checks each field it reads, where the SDK's
 * schema drops a whole update for one field it refuses (claude-agent-acp 0.23.1's `usage_update`
 * with `"used": null` lost the session's cost) and an unknown kind before it can be counted.
 */
function takingUpdates(readable: ReadableStream<AnyMessage>, onUpdate: Services['onUpdate']): ReadableStream<AnyMessage> {
  return readable.pipeThrough(
    new TransformStream<AnyMessage, AnyMessage>({
      transform(message, controller) {
        const params = updateParams(message);
        if (params) onUpdate(params.sessionId, params.update);
        else controller.enqueue(message);
      },
    }),
  );
}

export interface Services {
  /** One `session/update`, unparsed (Work.apply trusts nothing), in the order the agent sent them. */
  onUpdate(sessionId: unknown, update: unknown): void;
  /** The agent sent a line that is not a JSON-RPC message (the SDK refused it and went on). */
  onMalformed(): void;
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
    /** The JSON-RPC error code, when the agent answered with an error. */
    readonly rpcCode?: number,
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
    readable: takingUpdates(stream.readable, (id, update) => services.onUpdate(id, update)),
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
  return new AcpError(`the ACP agent answered with an error: ${text}`, 'agent_error', typeof e.code === 'number' ? e.code : undefined);
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
