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
  type ClientConnection,
  type InitializeResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { describeExit, type AgentProcess } from './agent-process.js';
import type { Approvals } from './approvals.js';
import type { FsService } from './fs-service.js';
import type { TerminalService } from './terminal-service.js';

/** The largest message taken from the agent: a 10 MiB write plus its JSON-RPC envelope and escaping. */
export const MAX_MESSAGE_BYTES = 11 * 1024 * 1024;

export interface Services {
  /** One `session/update`, unparsed (updates.ts trusts nothing). */
  onUpdate(sessionId: unknown, update: unknown): void;
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

/** `session/update`'s params, checked only for being an object: its update is read by Work.apply. */
function updateParams(params: unknown): SessionNotification {
  if (typeof params !== 'object' || params === null) throw new Error('session/update without params');
  return params as SessionNotification;
}

export function connectAgent(agent: AgentProcess, services: Services): ClientConnection {
  const app = client({ name: 'backchannel' })
    // Parsed here, not by the SDK's schema: an unknown update kind must be counted, not dropped.
    .onNotification(methods.client.session.update, updateParams, ({ params }) => services.onUpdate(params.sessionId, params.update))
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
    Writable.toWeb(agent.child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(agent.child.stdout) as ReadableStream<Uint8Array>,
    { maxMessageBytes: MAX_MESSAGE_BYTES },
  );
  return app.connect(stream);
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
