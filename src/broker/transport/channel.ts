/**
 * One attempt's endpoint (a TaskEndpoint over `net`, on a Unix socket or a named pipe): accepts
 * connections, authenticates each by its first line, decodes NDJSON and hands validated agent
 * messages up through the shared inbound pipeline. Knows nothing about task state.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import {
  DEFAULT_MAX_ATTACHMENT_BYTES,
  DEFAULT_MAX_LINE_BYTES,
  LineDecoder,
  encodeLine,
  isPayload,
  rawAttachments,
  resolveAttachments,
  TextWhileReceiving,
  type AgentMessage,
  type ReceivedText,
  type AskMessage,
  type BrokerMessage,
  type Payload,
  type ToolCallMessage,
} from '../../protocol/index.js';
import { countAcceptError, countRefused } from './connection-tally.js';
import { readInbound } from './inbound.js';
import type { EndpointAddress, TaskEndpoint } from './task-endpoint.js';
import type { RejectCause } from '../../model/task.js';

export interface ChannelLimits {
  /** Max bytes of one line from an authenticated connection. */
  maxLineBytes: number;
  /** Max bytes of the first line (before the sender proved it knows the token). */
  preAuthMaxLineBytes: number;
  /** Close a connection that has not authenticated within this time (slowloris guard). */
  authTimeoutMs: number;
  /** Simultaneous connections; more are closed at once (connection-flood guard). */
  maxConnections: number;
  /** Bytes of all attachments an attempt announces, together (docs/protocol.md §4.1). */
  maxAttachmentBytes: number;
}

/** drained() waits at most this long for connections that keep delivering after the agent exited. */
const DRAIN_CAP_MS = 30_000;

/** A connection lets the event loop go after this much read in a row (≈ 1,000 small lines, ≈ 1 ms). */
const YIELD_AFTER_BYTES = 256 * 1024;

const AUTH_REQUIRED = 'authentication required: the first message must carry the task token';

export interface ChannelOptions {
  /**
   * Refuse a first line without the token. Off by default on a private POSIX socket (0700 directory,
   * 0600 file: only our own user can connect, and that user can read the agent's environment anyway);
   * always on for a named pipe, whose name anyone can open. See docs/protocol.md §3.
   */
  requireToken: boolean;
}

export const DEFAULT_CHANNEL_LIMITS: ChannelLimits = {
  maxLineBytes: DEFAULT_MAX_LINE_BYTES,
  preAuthMaxLineBytes: 1024 * 1024,
  authTimeoutMs: 10_000,
  maxConnections: 64,
  maxAttachmentBytes: DEFAULT_MAX_ATTACHMENT_BYTES,
};

export interface ChannelHandlers {
  /** A validated payload from an authenticated connection. */
  payload(payload: Payload, reply: (message: BrokerMessage) => void): void;
  ask(message: AskMessage, reply: (message: BrokerMessage) => void): void;
  /** A call to a tool the task's caller hosts; `reply` carries its `tool_result`. */
  toolCall(message: ToolCallMessage, reply: (message: BrokerMessage) => void): void;
  /** Any valid message from an authenticated sender (hello included): the agent is alive. */
  activity(): void;
  /** Debugging aid (BACKCHANNEL_DEBUG=1): sees every received line before it is parsed. */
  trace?(text: string): void;
  /** What to send right after a connection authenticates (welcome, input). */
  greeting(): BrokerMessage[];
  /** Anything worth recording about the channel: malformed lines, rejected senders (with the cause, when known). */
  problem(kind: 'malformed' | 'rejected', detail: string, cause?: RejectCause): void;
  /** A connection was refused; `reason` is short ("wrong token"), for the task's failure message. */
  refused(reason: string): void;
  /** The endpoint could not accept a connection (`message`: the error's, e.g. EMFILE); counted for the failure message. */
  acceptError?(message: string): void;
  /** A line exceeded the limit on an authenticated connection: the result would be lost. */
  overflow(detail: string): void;
}

interface Connection {
  socket: Socket;
  authenticated: boolean;
  readonly decoder: LineDecoder;
  /** Writes a broker message back on this connection (made once: dispatch runs for every line). */
  readonly reply: (message: BrokerMessage) => void;
  /** Lines waiting to be written (see write()). */
  outbox: string[];
  /** Bytes read since the connection last let the event loop go (see yieldTurn()). */
  unyielded: number;
  authTimer?: NodeJS.Timeout;
  /** The peer sent its last byte (or reading failed after the last one): nothing more to read. */
  inputEnded: boolean;
  /** A write failed (the peer closed without reading): nothing more is written, reading goes on. */
  writeFailed: boolean;
}

export class TaskChannel implements TaskEndpoint {
  readonly endpoint: string;
  private server: Server | undefined;
  private readonly connections = new Set<Connection>();
  /** Callers of drained() waiting for the last connection to close. */
  private readonly drainWaiters = new Set<() => void>();
  private readonly tokenBytes: Buffer;
  private closed = false;
  /** When a connection was last accepted or delivered bytes (performance.now()), for drained(). */
  private lastByteAt = 0;
  /** Counts accepts, reads and ends, for drained(): a turn that heard something is not a quiet one. */
  private heard = 0;
  /** Attachment bytes announced on this endpoint so far (bounded by `maxAttachmentBytes`). */
  private attachmentBytes = 0;

  constructor(
    private readonly address: EndpointAddress,
    readonly taskId: string,
    token: string,
    private readonly handlers: ChannelHandlers,
    private readonly limits: ChannelLimits = DEFAULT_CHANNEL_LIMITS,
    private readonly options: ChannelOptions = { requireToken: true },
  ) {
    this.endpoint = address.path;
    this.tokenBytes = Buffer.from(token, 'utf8');
  }

  /** Starts listening; resolves once the endpoint accepts connections (so the agent can be spawned). */
  async listen(): Promise<void> {
    // Half-open: a connection's end of input does not end our side by itself (see endOfInput()).
    const server = createServer({ allowHalfOpen: true }, (socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.endpoint, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => {
      countAcceptError(error.message);
      this.handlers.acceptError?.(error.message);
      this.handlers.problem('rejected', `endpoint error: ${error.message}`);
    });
    this.address.secure();
  }

  /** Sends to every authenticated connection. Returns how many received it. */
  send(message: BrokerMessage): number {
    const line = encodeLine(message);
    let sent = 0;
    for (const connection of this.connections) {
      if (connection.authenticated && !connection.socket.destroyed) {
        this.write(connection, line);
        sent += 1;
      }
    }
    return sent;
  }

  /**
   * Resolves when no connection is left open, or once none has delivered a byte for `quietMs`. A
   * connection still delivering is waited for — an agent that exited may leave a socket buffer of
   * lines that a busy broker takes seconds to read — but not past DRAIN_CAP_MS in all (a grandchild
   * that trickles bytes on an inherited connection must not hold the task open).
   *
   * Every judgement comes after a turn of the event loop with its I/O phase (see afterIo()): the
   * agent's connection may still wait in the listen backlog when its exit is seen (a busy broker
   * reaps the child in the same turn in which it connected, wrote and exited; "no connection" then
   * failed tasks whose result was on its way), and a loop that was blocked is not quiet, it was deaf.
   */
  async drained(quietMs: number): Promise<void> {
    const cap = performance.now() + DRAIN_CAP_MS;
    for (;;) {
      const heard = this.heard;
      await afterIo();
      if (this.connections.size === 0) return;
      const now = performance.now();
      const quietFor = now - this.lastByteAt;
      if (now >= cap) return;
      if (quietFor >= quietMs) {
        // Quiet by the clock, but something came in this turn: a connection accepted in a turn's poll
        // is read only in the next one, so judge after that. (A broker blocked for seconds, in a
        // spawn, accepted the agent's connection and judged it quiet before reading a byte of it.)
        if (this.heard === heard) return;
        continue;
      }
      await this.closedOr(Math.min(quietMs - quietFor, cap - now));
    }
  }

  /** Resolves after `ms`, or sooner once the last connection has closed. */
  private closedOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiters = this.drainWaiters;
      const finish = (): void => {
        clearTimeout(timer);
        waiters.delete(finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      waiters.add(finish);
    });
  }

  /** Stops accepting, ends every connection (after flushing what was written) and removes the socket file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of this.connections) {
      clearTimeout(connection.authTimer);
      // Replies still waiting for their turn (write()) go out before the end.
      this.flush(connection);
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
      this.handlers.problem('rejected', `connection refused: ${this.limits.maxConnections} connections already open`, 'limit');
      this.refused('too many connections');
      socket.destroy();
      return;
    }
    this.lastByteAt = performance.now();
    this.heard += 1;
    const connection: Connection = {
      socket,
      reply: (answer) => this.replyNow(connection, encodeLine(answer)),
      outbox: [],
      unyielded: 0,
      inputEnded: false,
      writeFailed: false,
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
      this.handlers.problem('rejected', `connection closed: no authenticated message within ${this.limits.authTimeoutMs} ms`, 'auth');
      this.refused('no first line in time');
      socket.destroy();
    }, this.limits.authTimeoutMs);
    this.connections.add(connection);
    this.keepReadingThroughErrors(connection);
    socket.on('data', (chunk: Buffer) => {
      this.lastByteAt = performance.now();
      this.heard += 1;
      connection.decoder.push(chunk);
      if (connection.authenticated && connection.decoder.buffered > 0) this.checkUnfinished();
      connection.unyielded += chunk.length;
      if (connection.unyielded >= YIELD_AFTER_BYTES && connection.decoder.rawPending === 0) this.yieldTurn(connection);
    });
    socket.on('end', () => {
      this.heard += 1;
      this.endOfInput(connection);
    });
    socket.on('error', () => {
      // The peer is gone; 'close' follows. (Read and write errors before the end of input never get
      // here: see keepReadingThroughErrors().)
    });
    socket.on('close', () => {
      clearTimeout(connection.authTimer);
      this.connections.delete(connection);
      if (this.connections.size === 0) for (const wake of [...this.drainWaiters]) wake();
    });
  }

  /**
   * A peer that wrote everything and closed without reading makes our write fail (EPIPE, or
   * ECONNRESET). Node then marks the whole stream errored and destroys it: it drops what it reads
   * from then on, and closing the descriptor throws away every byte the peer wrote that is still
   * unread in the kernel (with a burst over the 256 KiB read per turn: the rest of the burst and its
   * success). Deferring our writes to the next turn only narrowed that race. So a failed write is
   * taken here, before the stream sees it: it ends our writing, never our reading, and the
   * connection is read to the end of its input before it is destroyed. A failed read comes after
   * the last byte (the kernel returns what is queued first) and is taken as the end of input, so
   * what the stream still holds is handled too.
   */
  private keepReadingThroughErrors(connection: Connection): void {
    const { socket } = connection;
    const failed = (error: Error | null | undefined): void => {
      if (error) this.writeFailed(connection);
    };
    const write = socket._write.bind(socket);
    socket._write = (chunk, encoding, callback) =>
      write(chunk, encoding, (error) => {
        failed(error);
        callback();
      });
    const writev = socket._writev?.bind(socket);
    if (writev)
      socket._writev = (chunks, callback) =>
        writev(chunks, (error) => {
          failed(error);
          callback();
        });
    const destroy = socket.destroy.bind(socket);
    socket.destroy = ((error?: Error) => {
      if (error === undefined || connection.inputEnded || (error as NodeJS.ErrnoException).syscall !== 'read') return destroy(error);
      connection.writeFailed = true;
      socket.push(null);
      return socket;
    }) as Socket['destroy'];
  }

  /** Nobody reads what we write any more: stop writing, and close once the input is in. */
  private writeFailed(connection: Connection): void {
    connection.writeFailed = true;
    connection.outbox.length = 0;
    if (connection.inputEnded) connection.socket.destroy();
  }

  /**
   * The peer's last byte is in: a cut line or attachment is reported, replies still waiting for
   * their turn go out, and our side ends (a peer that half-closed still reads them: the ack to its
   * result). After a failed write there is nobody to write to: the socket is destroyed.
   */
  private endOfInput(connection: Connection): void {
    connection.inputEnded = true;
    const raw = connection.decoder.rawPending;
    if (raw > 0) this.handlers.problem('malformed', `connection closed with ${raw} bytes of an attachment still to come`);
    const leftover = connection.decoder.buffered;
    if (leftover > 0) {
      this.handlers.problem('malformed', `connection closed mid-line (${leftover} bytes without a newline)`);
      connection.decoder.end();
    }
    const { socket } = connection;
    if (connection.writeFailed) return void socket.destroy();
    this.flush(connection);
    socket.end();
  }

  /**
   * A reply to what the agent sent (an answer, a tool result, an ack) goes out now, behind anything
   * still waiting in the outbox. Deferred to the check phase, it waited for every other socket ready
   * in the same poll (50 streaming agents: up to ~1 ms, the round trip's p99 under streams). A
   * failed write is safe now (keepReadingThroughErrors), so deferring no longer protects the read.
   */
  private replyNow(connection: Connection, line: string): void {
    if (connection.outbox.length > 0) return this.write(connection, line);
    const { socket } = connection;
    if (!connection.writeFailed && !socket.destroyed && !socket.writableEnded) socket.write(line);
  }

  /** Writes on the next turn of the event loop, together with whatever else this turn replies. */
  private write(connection: Connection, line: string): void {
    if (connection.writeFailed || connection.outbox.push(line) > 1) return;
    setImmediate(() => this.flush(connection));
  }

  /** Writes the replies waiting in the outbox, if there is still anyone to write to. */
  private flush(connection: Connection): void {
    const lines = connection.outbox.splice(0);
    const { socket } = connection;
    if (lines.length > 0 && !connection.writeFailed && !socket.destroyed && !socket.writableEnded) socket.write(lines.join(''));
  }

  /**
   * Lets the other connections (other tasks, a question waiting for its answer) have the event loop.
   * libuv reads a readable socket up to 32 times in one turn, and an agent that streams fast refills
   * it meanwhile: one chatty agent held the loop for 10-13 ms at a time (bench/stream.js workload).
   * Paused, at most one more chunk is read (and kept); the rest waits for the next turn.
   */
  private yieldTurn(connection: Connection): void {
    connection.unyielded = 0;
    const { socket } = connection;
    socket.pause();
    setImmediate(() => {
      // Not a connection that was refused or closed meanwhile: reject() and close() pause or end it for good.
      if (!socket.destroyed && !socket.writableEnded) socket.resume();
    });
  }

  private onOverflow(connection: Connection, bytes: number): void {
    const limit = connection.decoder.maxLineBytes;
    const detail = `line of ${bytes}+ bytes exceeds the ${limit}-byte limit`;
    this.reject(connection, detail);
    if (connection.authenticated) this.handlers.overflow(detail);
    else {
      this.handlers.problem('rejected', `unauthenticated ${detail}`, 'limit');
      this.refused('first line too long');
    }
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
      if (!connection.authenticated) return this.refuse(connection, inbound.detail, inbound.cause);
      if (inbound.protocol) {
        this.reject(connection, inbound.detail);
        return this.handlers.overflow(inbound.detail);
      }
      if (inbound.callId !== undefined)
        connection.reply({
          type: 'tool_result',
          task_id: this.taskId,
          call_id: inbound.callId,
          error: `malformed tool_call: ${inbound.detail}`,
        });
      if (!inbound.fatal) return this.handlers.problem(inbound.kind, inbound.detail, inbound.cause);
      // Its raw bytes would be read as lines: the connection cannot go on.
      const detail = `refused a message whose attachment bytes follow: ${inbound.detail}`;
      this.reject(connection, detail);
      return this.handlers.overflow(detail);
    }
    const message = inbound.message;
    if (!connection.authenticated && !this.authenticate(connection, inbound.token)) return;
    if (isPayload(message) && message.attachments && rawAttachments(message).length > 0)
      return this.receiveAttachments(connection, message);
    this.dispatch(connection, message);
  }

  /**
   * Reads the raw bytes that follow a payload's line, one attachment after the other, and dispatches
   * the payload with every attachment's content once the last byte is in. Bounded per endpoint.
   */
  private receiveAttachments(connection: Connection, payload: Payload): void {
    const wanted = rawAttachments(payload);
    const total = wanted.reduce((sum, a) => sum + a.bytes, 0);
    this.attachmentBytes += total;
    if (this.attachmentBytes > this.limits.maxAttachmentBytes) {
      const detail = `attachments of ${this.attachmentBytes} bytes exceed the ${this.limits.maxAttachmentBytes}-byte limit`;
      this.reject(connection, detail);
      return this.handlers.overflow(detail);
    }
    this.handlers.activity();
    const raw: Array<Buffer | ReceivedText> = [];
    const arrived = (item: Buffer | ReceivedText): void => {
      raw.push(item);
      this.handlers.activity();
      next();
    };
    const next = (): void => {
      const header = wanted[raw.length];
      if (!header) return this.attachmentsIn(connection, payload, raw);
      if (header.encoding !== 'utf8') return connection.decoder.readRaw(header.bytes, arrived);
      // Text is decoded while it arrives (see TextWhileReceiving), not collected into a Buffer first.
      const text = new TextWhileReceiving();
      connection.decoder.readRawPieces(
        header.bytes,
        (piece) => text.push(piece),
        () => arrived(text.finish()),
      );
    };
    next();
  }

  private attachmentsIn(connection: Connection, payload: Payload, raw: Array<Buffer | ReceivedText>): void {
    const resolved = resolveAttachments(payload, raw);
    if (!resolved.ok) return this.handlers.problem('malformed', resolved.reason);
    this.dispatch(connection, resolved.payload);
  }

  /** Counts a refused connection (here and process-wide, see connection-tally.ts). */
  private refused(reason: string): void {
    countRefused();
    this.handlers.refused(reason);
  }

  private refuse(connection: Connection, detail: string, cause: RejectCause | undefined): void {
    this.handlers.problem('rejected', `first message refused: ${detail}`, cause);
    this.refused(`bad first line (${detail.split(/[:(]/)[0]!.trim()})`);
    this.reject(connection, AUTH_REQUIRED);
  }

  private authenticate(connection: Connection, token: string | undefined): boolean {
    const given = token === undefined ? undefined : Buffer.from(token, 'utf8');
    const wrong = given !== undefined && (given.length !== this.tokenBytes.length || !timingSafeEqual(given, this.tokenBytes));
    if (wrong || (given === undefined && this.options.requireToken)) {
      const reason = wrong ? 'wrong token' : 'no token on its first line';
      this.handlers.problem('rejected', reason, 'auth');
      this.refused(reason);
      this.reject(connection, wrong ? reason : AUTH_REQUIRED);
      return false;
    }
    connection.authenticated = true;
    clearTimeout(connection.authTimer);
    // Proven senders may send big lines (a 10 MB result); the decoder reads the limit per line.
    connection.decoder.maxLineBytes = this.limits.maxLineBytes;
    for (const greeting of this.handlers.greeting()) this.write(connection, encodeLine(greeting));
    return true;
  }

  private dispatch(connection: Connection, message: AgentMessage): void {
    this.handlers.activity();
    if (isPayload(message)) this.handlers.payload(message, connection.reply);
    else if (message.type === 'ask') this.handlers.ask(message, connection.reply);
    else if (message.type === 'tool_call') this.handlers.toolCall(message, connection.reply);
    // hello: authentication was all it was for.
  }
}

/**
 * Resolves after the event loop has been through its I/O phase at least once: the first immediate runs
 * at the end of this turn (or the next), the second only after the next turn's poll, which accepts
 * every connection waiting in a listen backlog and reads what the kernel holds for every socket being read.
 */
function afterIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
