/**
 * The agent's end of the socket: connect with bounded retry, coalesced writes (one write() per tick,
 * so a chatty agent is not syscall-bound), and decoded broker messages.
 */
import { createConnection, type Socket } from 'node:net';
import { LineDecoder, encodeLine, parseLine, validateBrokerMessage, type BrokerMessage } from '../protocol/index.js';

export interface ConnectOptions {
  /** Retries before giving up (about 2.3 s in all with the backoff). @default 8 */
  retries?: number;
  /** First retry delay, doubled up to 500 ms. @default 25 */
  retryDelayMs?: number;
}

/** Errors worth retrying: the endpoint is not there yet or not accepting (Windows pipes: EBUSY too). */
const TRANSIENT = new Set(['ENOENT', 'ECONNREFUSED', 'EAGAIN', 'EBUSY']);
/** `end()` gives up on a broker that took no byte for this long (a busy machine can stall a process for a while). */
const STALL_MS = 2000;

export async function connectWithRetry(endpoint: string, options: ConnectOptions = {}): Promise<Socket> {
  const retries = options.retries ?? 8;
  let delay = options.retryDelayMs ?? 25;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectOnce(endpoint);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (!TRANSIENT.has(code) || attempt > retries) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(500, delay * 2);
    }
  }
}

function connectOnce(endpoint: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(endpoint);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

export class MessageLink {
  /** Lines (strings) and raw attachment bytes (Buffers), in the order they go out. */
  private queue: Array<string | Buffer> = [];
  private scheduled = false;
  private closedReason: string | undefined;
  private readonly closeWaiters: Array<() => void> = [];

  constructor(
    private readonly socket: Socket,
    onMessage: (message: BrokerMessage) => void,
    maxLineBytes = 256 * 1024 * 1024,
  ) {
    const decoder = new LineDecoder(
      {
        line(text) {
          const parsed = parseLine(text);
          if (!parsed.ok) return;
          const checked = validateBrokerMessage(parsed.value);
          // Unknown broker message types are ignored, as the protocol asks.
          if (checked.ok) onMessage(checked.message);
        },
        overflow() {},
      },
      maxLineBytes,
    );
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
    socket.on('error', (error) => this.markClosed(error.message));
    socket.on('close', () => this.markClosed('connection closed'));
  }

  get closed(): string | undefined {
    return this.closedReason;
  }

  /** Queues a message; everything queued in one tick goes out in one write. */
  send(message: unknown): void {
    if (this.closedReason) return;
    this.queue.push(encodeLine(message));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * Writes a message now, after anything already queued (one write, no wait for the next tick),
   * followed by `raw` bytes (attachments) as they are, not copied.
   */
  sendNow(message: unknown, raw: readonly Buffer[] = []): Promise<void> {
    if (this.closedReason) return Promise.resolve();
    this.queue.push(encodeLine(message));
    for (const bytes of raw) if (bytes.length > 0) this.queue.push(bytes);
    return this.flush();
  }

  /** Writes what is queued now; resolves when the kernel has it (or the link is gone). */
  flush(): Promise<void> {
    this.scheduled = false;
    if (this.queue.length === 0 || this.closedReason) return Promise.resolve();
    const queue = this.queue;
    this.queue = [];
    if (queue.length === 1 || queue.every((item) => typeof item === 'string')) {
      const data = queue.length === 1 ? queue[0]! : queue.join('');
      return new Promise((resolve) => this.socket.write(data, () => resolve()));
    }
    // Lines joined, raw bytes as they are (not copied); writes complete in order, so the last one's
    // callback means all are in the kernel.
    const pieces: Array<string | Buffer> = [];
    for (const item of queue) {
      const last = pieces.length - 1;
      if (typeof item === 'string' && typeof pieces[last] === 'string') pieces[last] += item;
      else pieces.push(item);
    }
    const final = pieces.pop()!;
    this.socket.cork();
    for (const piece of pieces) this.socket.write(piece);
    return new Promise((resolve) => {
      this.socket.write(final, () => resolve());
      this.socket.uncork();
    });
  }

  /** Resolves when the connection is gone. */
  whenClosed(): Promise<void> {
    if (this.closedReason) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /**
   * Closes the connection once everything written is in the kernel ('finish': earlier writes still
   * held back by a full socket included). It waits as long as the broker keeps reading — a busy
   * broker may take seconds to drain megabytes — and gives up only after STALL_MS in which the
   * kernel took nothing more (a broker that stopped reading; its own guards end such a task). On a
   * Unix socket the written bytes are then in the broker's receive queue already, so closing at once
   * loses nothing and spares waiting for the broker's FIN, a wake-up of both processes: with 50
   * agents on 2 cores that wait was half a second per agent. A Windows pipe also waits for the broker
   * to close (STALL_MS at most).
   */
  async end(): Promise<void> {
    await this.flush();
    if (this.closedReason) return;
    await this.whileWriting(new Promise((resolve) => this.socket.end(() => resolve(undefined))));
    if (process.platform === 'win32')
      await Promise.race([this.whenClosed(), new Promise((resolve) => setTimeout(resolve, STALL_MS).unref())]);
    this.socket.destroy();
  }

  /** Resolves with `done`, when the connection is gone, or once the kernel has taken no byte for STALL_MS. */
  private whileWriting(done: Promise<unknown>): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise((resolve) => {
      let before = this.unsent();
      timer = setInterval(() => {
        const now = this.unsent();
        if (now.buffered >= before.buffered && now.queued >= before.queued) resolve(undefined);
        before = now;
      }, STALL_MS);
      timer.unref();
    });
    return Promise.race([done, stalled, this.whenClosed()]).finally(() => clearInterval(timer));
  }

  /**
   * Bytes written but not in the kernel yet, as two counts that each shrink only when the kernel
   * takes bytes: Node's buffer (a write in flight counts whole until it completes) and libuv's queue
   * (which shrinks as the kernel takes the write in flight piece by piece, and grows when Node hands
   * it the next one — so their sum is no measure of progress).
   */
  private unsent(): { buffered: number; queued: number } {
    const handle = (this.socket as unknown as { _handle?: { writeQueueSize?: number } })._handle;
    return { buffered: this.socket.writableLength, queued: handle?.writeQueueSize ?? 0 };
  }

  private markClosed(reason: string): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    for (const wake of this.closeWaiters.splice(0)) wake();
  }
}
