/**
 * Spawning off the hub's event loop. `child_process.spawn` runs on the calling thread's loop: libuv
 * forks, then blocks until the child has exec'd. With both cores busy that wait is long, and in a
 * many-task run the broker's loop spent most of its time there, answering nobody (docs/performance.md,
 * "The hub answering while it spawns"). A `Spawner` does the spawn on a worker thread of its own
 * (spawner-thread.ts), which owns the children and their pipes; this side gives each child the same
 * small surface a `ChildProcess` gives an attempt (`AgentProcess`: pid, stdout/stderr as Readable,
 * 'spawn' / 'error' / 'exit' events).
 *
 * Why a thread, not a spawner process: a thread shares the process, so the children stay the hub's
 * own (same pid as parent, their process groups killed from here by pid as before, no extra hop for
 * every byte of output, nothing to re-parent if the hub is SIGKILLed), and a thread starts in
 * milliseconds inside a packaged Electron app too. The fork itself still copies the hub's page tables
 * (it is the hub's process); what leaves the loop is the wait. Measured in docs/performance.md.
 * One thread, not a pool: spawns are serialised there as they were on the loop, and at the same load
 * children started through it as fast as from the loop (same section); a pool pays only if that
 * changes.
 *
 * Guarantees:
 * - Output: bytes in order, flow-controlled by credit (spawner-thread.ts): this side holds at most its
 *   stream buffer plus OUTPUT_WINDOW_BYTES per pipe; a child that writes faster than the attempt reads
 *   waits on its pipe, as it did before.
 * - A spawn failure is an 'error' event with Node's code (`ENOENT`, `EACCES`…) and no pid.
 * - The thread dying (an exception in it, `terminate()`) fails every child it held, never silently:
 *   a child not yet started gets an 'error'; a started one has its process group SIGKILLed, then gets
 *   an 'error' saying the spawner stopped, its streams end and it 'exit's (null, 'SIGKILL'). The next
 *   spawn starts a new thread.
 * - The thread keeps the process alive only while it holds a child (as a ChildProcess would) that is
 *   not a spare waiting for its task, and stops by itself after IDLE_MS without any child; nothing of
 *   it outlives its last child for long.
 */
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { killTree } from '../../base/kill-tree.js';
import { SPAWNER_THREAD_SOURCE, type FromThread, type SpawnFailure, type SpawnRequest, type ToThread } from './spawner-thread.js';

export type { SpawnRequest } from './spawner-thread.js';

/** A started (or starting) sub-agent: the part of a ChildProcess an attempt uses. */
export interface AgentProcess {
  /** Undefined until 'spawn', and forever after a spawn failure. */
  readonly pid: number | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  once(event: 'spawn', listener: () => void): this;
  once(event: 'error', listener: (error: NodeJS.ErrnoException) => void): this;
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): this;
}

/** A spare's side of an `AgentProcess` (SpawnRequest.spare). */
export interface SpareProcess extends AgentProcess {
  /** True once its exit was seen (or its start failed). */
  readonly gone: boolean;
  /** Writes `line` to its stdin, then closes it; it runs as any agent from now on. Once only. */
  handOff(line: string): void;
  /** Keeps this process alive until its exit is seen, as any child (a spare being killed, its exit awaited). */
  hold(): void;
}

/** With no child for this long, the thread is stopped (a new one starts in milliseconds when needed). */
const IDLE_MS = 2000;
/** Room each output stream buffers on this side before the thread stops reading that pipe. */
const STREAM_BUFFER_BYTES = 64 * 1024;

/** The error a child gets when the thread that owned it stopped. */
export class SpawnerStopped extends Error {
  override readonly name = 'SpawnerStopped';
  readonly code = 'ESPAWNERSTOPPED';
}

export class Spawner {
  private worker: Worker | undefined;
  private readonly children = new Map<number, SpawnedAgent>();
  /** Spares not yet handed their task: held, but they keep nothing alive. */
  private readonly waiting = new Set<number>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Messages to the thread posted in this turn of the loop, sent as one batch (see spawner-thread.ts). */
  private outbox: ToThread[] = [];
  private readonly flushOutbox = (): void => {
    const batch = this.outbox;
    this.outbox = [];
    this.worker?.postMessage(batch);
  };

  /** Starts `request` on the thread; the answer comes as the returned process's events. */
  spawn(request: SpawnRequest & { spare: true }): SpareProcess;
  spawn(request: SpawnRequest): AgentProcess;
  spawn(request: SpawnRequest): AgentProcess {
    const worker = this.thread();
    const id = this.nextId++;
    const child = new SpawnedAgent(
      (message) => this.post(worker, message),
      id,
      () => {
        this.waiting.delete(id);
        this.held();
      },
    );
    this.children.set(id, child);
    if (request.spare === true) this.waiting.add(id);
    this.held();
    this.post(worker, { t: 'spawn', id, ...request });
    return child;
  }

  /** Queues `message` for `worker` (dropped if the thread is gone, as a postMessage to it would be). */
  private post(worker: Worker, message: ToThread): void {
    if (this.worker !== worker) return;
    if (this.outbox.length === 0) setImmediate(this.flushOutbox);
    this.outbox.push(message);
  }

  /** What came from the thread: batches (wake-ups of this loop) and the messages in them (for tests and diagnostics). */
  readonly received = { batches: 0, messages: 0 };

  /** Children started or starting and not yet closed (for tests and diagnostics). */
  get holding(): number {
    return this.children.size;
  }

  /** The thread's id while it runs (tests stop it to check what its children get). */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** Stops the thread now: every child it held fails as described above. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (worker) await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // No execArgv: the hub's own flags (a loader, --inspect) are not a worker's.
    const worker = new Worker(SPAWNER_THREAD_SOURCE, { eval: true, execArgv: [], argv: [], stdout: false, stderr: false });
    this.worker = worker;
    worker.on('message', (batch: FromThread[]) => {
      this.received.batches += 1;
      this.received.messages += batch.length;
      for (const message of batch) this.receive(message);
    });
    worker.on('error', (error) => this.lost(worker, `the spawner thread failed: ${error.message}`));
    worker.on('exit', (code) => this.lost(worker, `the spawner thread stopped (exit code ${code})`));
    return worker;
  }

  private receive(message: FromThread): void {
    const child = this.children.get(message.id);
    if (!child) return;
    switch (message.t) {
      case 'spawned':
        return child.spawned(message.pid);
      case 'failed':
        this.release(message.id);
        return child.failed(spawnError(message.error));
      case 'data':
        return child.output(message.fd, Buffer.from(message.chunk));
      case 'end':
        return child.ended(message.fd);
      case 'exit':
        return child.exited(message.code, message.signal);
      case 'closed':
        return this.release(message.id);
    }
  }

  /** Fails every child of a thread that is gone; the next spawn starts a new one. */
  private lost(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.outbox = [];
    clearTimeout(this.idleTimer);
    const children = [...this.children.values()];
    this.children.clear();
    this.waiting.clear();
    for (const child of children) child.lost(reason);
  }

  private release(id: number): void {
    this.children.delete(id);
    this.waiting.delete(id);
    if (this.children.size > 0) return this.held();
    this.worker?.unref();
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.idleTimer = setTimeout(() => {
      if (this.worker === worker && this.children.size === 0) {
        this.worker = undefined;
        this.outbox = [];
        void worker?.terminate();
      }
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** Children held: the thread keeps this process alive while one of them is not a waiting spare. */
  private held(): void {
    clearTimeout(this.idleTimer);
    if (this.children.size > this.waiting.size) this.worker?.ref();
    else this.worker?.unref();
  }
}

function spawnError(failure: SpawnFailure): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(failure.message);
  if (failure.code !== undefined) error.code = failure.code;
  if (failure.errno !== undefined) error.errno = failure.errno;
  if (failure.syscall !== undefined) error.syscall = failure.syscall;
  if (failure.path !== undefined) error.path = failure.path;
  return error;
}

/** One child as seen from the hub's thread. */
class SpawnedAgent extends EventEmitter implements SpareProcess {
  pid: number | undefined;
  readonly stdout: ChildOutput;
  readonly stderr: ChildOutput;
  private exitSeen = false;
  private startFailed = false;
  private handedOff = false;

  constructor(
    private readonly send: (message: ToThread) => void,
    private readonly id: number,
    private readonly adopted: () => void,
  ) {
    super();
    this.stdout = new ChildOutput((message) => send({ ...message, id, fd: 1 }));
    this.stderr = new ChildOutput((message) => send({ ...message, id, fd: 2 }));
  }

  get gone(): boolean {
    return this.exitSeen || this.startFailed;
  }

  handOff(line: string): void {
    if (this.handedOff) throw new Error('a spare takes one task');
    this.handedOff = true;
    this.adopted();
    this.send({ t: 'handoff', id: this.id, line });
  }

  hold(): void {
    this.adopted();
  }

  /** Sends `signal` to the child (its group is for base/kill-tree.ts). */
  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.pid === undefined || this.exitSeen) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  spawned(pid: number): void {
    this.pid = pid;
    this.emit('spawn');
  }

  failed(error: NodeJS.ErrnoException): void {
    this.startFailed = true;
    this.stdout.finish();
    this.stderr.finish();
    this.fail(error);
  }

  /** An 'error' nobody listens to would throw in the hub: the attempt always listens, a stray user may not. */
  private fail(error: NodeJS.ErrnoException): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  output(fd: 1 | 2, chunk: Buffer): void {
    (fd === 1 ? this.stdout : this.stderr).deliver(chunk);
  }

  ended(fd: 1 | 2): void {
    (fd === 1 ? this.stdout : this.stderr).finish();
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitSeen) return;
    this.exitSeen = true;
    this.emit('exit', code, signal);
  }

  lost(reason: string): void {
    if (this.pid === undefined) return this.failed(new SpawnerStopped(`could not start the agent: ${reason}`));
    if (!this.exitSeen) {
      // Its pipes and its exit status went with the thread: nothing would tell us it ended.
      try {
        if (process.platform !== 'win32') killTree(this.pid, 'SIGKILL');
        else this.kill('SIGKILL');
      } catch {
        // Not ours to kill any more (EPERM): still reported as lost.
      }
      this.fail(new SpawnerStopped(`${reason}; the agent (pid ${this.pid}) was killed`));
    }
    this.stdout.finish();
    this.stderr.finish();
    this.exited(null, 'SIGKILL');
  }
}

/** One output pipe's bytes on this side: a chunk is acked once taken within the buffer, else when read. */
class ChildOutput extends Readable {
  /** Bytes taken past the buffer's mark: acked when the reader asks for more. */
  private owed = 0;
  private finished = false;

  constructor(private readonly control: (message: { t: 'ack'; bytes: number } | { t: 'destroy' }) => void) {
    super({ highWaterMark: STREAM_BUFFER_BYTES });
  }

  deliver(chunk: Buffer): void {
    if (this.finished || this.destroyed) return;
    if (this.push(chunk)) this.control({ t: 'ack', bytes: chunk.length });
    else this.owed += chunk.length;
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.destroyed) this.push(null);
  }

  override _read(): void {
    if (this.owed === 0) return;
    const bytes = this.owed;
    this.owed = 0;
    this.control({ t: 'ack', bytes });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.finished) this.control({ t: 'destroy' });
    this.finished = true;
    callback(error);
  }
}

let shared: Spawner | undefined;

/** The process's spawner (one thread for every broker in the process). */
export function defaultSpawner(): Spawner {
  shared ??= new Spawner();
  return shared;
}
