/**
 * One attempt's endpoint (a TaskEndpoint over `net`, on a Unix socket or a named pipe): accepts
 * connections, authenticates each by its first line, decodes NDJSON and hands validated agent
 * messages up through the shared inbound pipeline. Knows nothing about task state.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import {
  DEFAULT_MAX_LINE_BYTES,
  LineDecoder,
  encodeLine,
  isPayload,
  type AgentMessage,
  type AskMessage,
  type BrokerMessage,
  type Payload,
} from '../../protocol/index.js';
import { readInbound } from './inbound.js';
import type { EndpointAddress, TaskEndpoint } from './task-endpoint.js';

export interface ChannelLimits {
  /** Max bytes of one line from an authenticated connection. */
  maxLineBytes: number;
  /** Max bytes of the first line (before the sender proved it knows the token). */
  preAuthMaxLineBytes: number;
  /** Close a connection that has not authenticated within this time (slowloris guard). */
  authTimeoutMs: number;
  /** Simultaneous connections; more are closed at once (connection-flood guard). */
  maxConnections: number;
}

export const DEFAULT_CHANNEL_LIMITS: ChannelLimits = {
  maxLineBytes: DEFAULT_MAX_LINE_BYTES,
  preAuthMaxLineBytes: 1024 * 1024,
  authTimeoutMs: 10_000,
  maxConnections: 64,
};

export interface ChannelHandlers {
  /** A validated payload from an authenticated connection. */
  payload(payload: Payload, reply: (message: BrokerMessage) => void): void;
  ask(message: AskMessage, reply: (message: BrokerMessage) => void): void;
  /** Any valid message from an authenticated sender (hello included): the agent is alive. */
  activity(): void;
  /** Debugging aid (BACKCHANNEL_DEBUG=1): sees every received line before it is parsed. */
  trace?(text: string): void;
  /** What to send right after a connection authenticates (welcome, input). */
  greeting(): BrokerMessage[];
  /** Anything worth recording about the channel: malformed lines, rejected senders. */
  problem(kind: 'malformed' | 'rejected', detail: string): void;
  /** A line exceeded the limit on an authenticated connection: the result would be lost. */
  overflow(detail: string): void;
}

interface Connection {
  socket: Socket;
  authenticated: boolean;
  readonly decoder: LineDecoder;
  /** Writes a broker message back on this connection (made once: dispatch runs for every line). */
  readonly reply: (message: BrokerMessage) => void;
  authTimer?: NodeJS.Timeout;
}

export class TaskChannel implements TaskEndpoint {
  readonly endpoint: string;
  private server: Server | undefined;
  private readonly connections = new Set<Connection>();
  /** Callers of drained() waiting for the last connection to close. */
  private readonly drainWaiters = new Set<() => void>();
  private readonly tokenBytes: Buffer;
  private closed = false;

  constructor(
    private readonly address: EndpointAddress,
    readonly taskId: string,
    token: string,
    private readonly handlers: ChannelHandlers,
    private readonly limits: ChannelLimits = DEFAULT_CHANNEL_LIMITS,
  ) {
    this.endpoint = address.path;
    this.tokenBytes = Buffer.from(token, 'utf8');
  }

  /** Starts listening; resolves once the endpoint accepts connections (so the agent can be spawned). */
  async listen(): Promise<void> {
    const server = createServer({ allowHalfOpen: false }, (socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.endpoint, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.handlers.problem('rejected', `endpoint error: ${error.message}`));
    this.address.secure();
  }

  /** Sends to every authenticated connection. Returns how many received it. */
  send(message: BrokerMessage): number {
    const line = encodeLine(message);
    let sent = 0;
    for (const connection of this.connections) {
      if (connection.authenticated && !connection.socket.destroyed) {
        connection.socket.write(line);
        sent += 1;
      }
    }
    return sent;
  }

  /** Resolves when no connection is left open, or after `timeoutMs`. */
  async drained(timeoutMs: number): Promise<void> {
    if (this.connections.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, timeoutMs);
      const waiter = () => finish();
      this.drainWaiters.add(waiter);
      const waiters = this.drainWaiters;
      function finish() {
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve();
      }
    });
  }

  /** Stops accepting, ends every connection (after flushing what was written) and removes the socket file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of this.connections) {
      clearTimeout(connection.authTimer);
      connection.socket.end();
      // A peer that never reads must not keep us open.
      setTimeout(() => connection.socket.destroy(), 200).unref();
    }
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.address.remove();
  }

  private accept(socket: Socket): void {
    if (this.closed || this.connections.size >= this.limits.maxConnections) {
      this.handlers.problem('rejected', `connection refused: ${this.limits.maxConnections} connections already open`);
      socket.destroy();
      return;
    }
    const connection: Connection = {
      socket,
      reply: (answer) => {
        if (!socket.destroyed && !socket.writableEnded) socket.write(encodeLine(answer));
      },
      authenticated: false,
      decoder: new LineDecoder(
        {
          line: (text) => this.onLine(connection, text),
          overflow: (bytes) => this.onOverflow(connection, bytes),
        },
        this.limits.preAuthMaxLineBytes,
      ),
    };
    connection.authTimer = setTimeout(() => {
      this.handlers.problem('rejected', `connection closed: no authenticated message within ${this.limits.authTimeoutMs} ms`);
      socket.destroy();
    }, this.limits.authTimeoutMs);
    this.connections.add(connection);
    socket.on('data', (chunk: Buffer) => {
      connection.decoder.push(chunk);
      if (connection.authenticated && connection.decoder.buffered > 0) this.checkUnfinished();
    });
    socket.on('end', () => {
      const leftover = connection.decoder.buffered;
      if (leftover > 0) {
        this.handlers.problem('malformed', `connection closed mid-line (${leftover} bytes without a newline)`);
        connection.decoder.end();
      }
    });
    socket.on('error', () => {
      // ECONNRESET and friends: the peer is gone; 'close' follows.
    });
    socket.on('close', () => {
      clearTimeout(connection.authTimer);
      this.connections.delete(connection);
      if (this.connections.size === 0) for (const wake of [...this.drainWaiters]) wake();
    });
  }

  private onOverflow(connection: Connection, bytes: number): void {
    const limit = connection.decoder.maxLineBytes;
    const detail = `line of ${bytes}+ bytes exceeds the ${limit}-byte limit`;
    this.reject(connection, detail);
    if (connection.authenticated) this.handlers.overflow(detail);
    else this.handlers.problem('rejected', `unauthenticated ${detail}`);
  }

  /**
   * Each connection's unfinished line is bounded by `maxLineBytes`, and so are all of them together:
   * otherwise 64 connections could each hold a line just under the limit.
   */
  private checkUnfinished(): void {
    let total = 0;
    const holding: Connection[] = [];
    for (const connection of this.connections) {
      if (!connection.authenticated || connection.decoder.buffered === 0) continue;
      total += connection.decoder.buffered;
      holding.push(connection);
    }
    if (total <= this.limits.maxLineBytes) return;
    const detail = `unfinished lines on ${holding.length} connections hold ${total} bytes, together they exceed the ${this.limits.maxLineBytes}-byte limit`;
    for (const connection of holding) this.reject(connection, detail);
    this.handlers.overflow(detail);
  }

  private reject(connection: Connection, reason: string): void {
    if (!connection.socket.destroyed) {
      // Read nothing more from it: what it still sends would only be buffered.
      connection.socket.pause();
      connection.socket.end(encodeLine({ type: 'reject', task_id: this.taskId, reason }));
      setTimeout(() => connection.socket.destroy(), 200).unref();
    }
  }

  private onLine(connection: Connection, text: string): void {
    if (connection.socket.destroyed || (connection.socket.writableEnded && !connection.authenticated)) return;
    if (text.length === 0) return;
    this.handlers.trace?.(text);
    const inbound = readInbound(text, this.taskId, 'socket');
    if (!inbound.ok) {
      if (!connection.authenticated) return this.refuse(connection, inbound.detail);
      return this.handlers.problem(inbound.kind, inbound.detail);
    }
    const message = inbound.message;
    if (!connection.authenticated && !this.authenticate(connection, message)) return;
    this.dispatch(connection, message);
  }

  private refuse(connection: Connection, detail: string): void {
    this.handlers.problem('rejected', `first message refused: ${detail}`);
    this.reject(connection, 'authentication required: the first message must carry the task token');
  }

  private authenticate(connection: Connection, message: AgentMessage): boolean {
    const token = (message as { token?: unknown }).token;
    const given = typeof token === 'string' ? Buffer.from(token, 'utf8') : undefined;
    if (!given || given.length !== this.tokenBytes.length || !timingSafeEqual(given, this.tokenBytes)) {
      this.handlers.problem('rejected', given ? 'wrong token' : 'first message without a token');
      this.reject(connection, given ? 'wrong token' : 'authentication required: the first message must carry the task token');
      return false;
    }
    connection.authenticated = true;
    clearTimeout(connection.authTimer);
    // Proven senders may send big lines (a 10 MB result); the decoder reads the limit per line.
    connection.decoder.maxLineBytes = this.limits.maxLineBytes;
    for (const greeting of this.handlers.greeting()) connection.socket.write(encodeLine(greeting));
    return true;
  }

  private dispatch(connection: Connection, message: AgentMessage): void {
    this.handlers.activity();
    if (isPayload(message)) this.handlers.payload(message, connection.reply);
    else if (message.type === 'ask') this.handlers.ask(message, connection.reply);
    // hello: authentication was all it was for.
  }
}
