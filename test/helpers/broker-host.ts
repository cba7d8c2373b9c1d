/**
 * Drives test/fixtures/broker-host.mjs: a broker in a child process that a test can SIGKILL, and
 * whose memory and fds are its own. Every host started is killed after the test.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { afterEach } from 'vitest';
import type { BrokerOptions, TaskSnapshot, TaskSpec } from '../../src/broker/index.js';
import { fixture } from './core.js';

export interface HostStats {
  rss: number;
  heapUsed: number;
  fds: number;
  updates: number;
  partials: number;
  ended: Record<string, number>;
  /** The state the task read as at each of its `ended` updates. */
  endedAs: Record<string, string[]>;
  bridgeEvents: number;
  peakRss: number;
  historyError?: string;
}

export interface HostResult {
  id: string;
  ok: boolean;
  payload?: { status: string; data?: unknown; meta?: Record<string, unknown> };
  reason?: string;
  message?: string;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

export class BrokerHost extends EventEmitter {
  readonly results = new Map<string, HostResult>();
  readonly warnings: string[] = [];
  historyError: string | null = null;
  /** Ids of the `early` tasks, submitted before the broker was ready. */
  early: string[] = [];
  private calls = 0;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    super();
    this.setMaxListeners(0);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.on('message', (message: any) => {
      if (message.reply !== undefined) {
        const waiter = this.pending.get(message.reply);
        this.pending.delete(message.reply);
        if (message.error) waiter?.reject(new Error(message.error));
        else waiter?.resolve(message.value);
      } else if (message.event === 'result') {
        this.results.set(message.id, message);
        this.emit('result', message);
      } else if (message.event === 'warning') {
        this.warnings.push(message.message);
      }
    });
    void this.exited.then(() => {
      running.delete(child);
      for (const waiter of this.pending.values()) waiter.reject(new Error('the broker host exited'));
      this.pending.clear();
    });
  }

  static async start(options: BrokerOptions & { bridge?: boolean; early?: TaskSpec[] }): Promise<BrokerHost> {
    const child = fork(fixture('broker-host.mjs'), [JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    running.add(child);
    const host = new BrokerHost(child);
    await new Promise<void>((resolve, reject) => {
      child.on('message', (message: any) => {
        if (message.event === 'ready') {
          host.historyError = message.historyError;
          host.early = message.early;
          resolve();
        }
      });
      void host.exited.then(({ code, signal }) => reject(new Error(`broker host exited before ready (${code ?? signal})`)));
    });
    return host;
  }

  get pid(): number {
    return this.child.pid!;
  }

  call<T>(op: string, args?: unknown): Promise<T> {
    const call = ++this.calls;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(call, { resolve, reject });
      this.child.send({ call, op, args });
    });
  }

  submit(spec: TaskSpec): Promise<string> {
    return this.call('submit', { spec });
  }

  /** Submits all at once (one round trip: the queue sees the whole load together). */
  submitMany(specs: TaskSpec[]): Promise<string[]> {
    return this.call('submitMany', { specs });
  }

  tasks(): Promise<TaskSnapshot[]> {
    return this.call('tasks');
  }

  get(id: string): Promise<TaskSnapshot | undefined> {
    return this.call('get', { id });
  }

  stats(): Promise<HostStats> {
    return this.call('stats');
  }

  /** Resolves with the task's outcome as the broker's caller saw it. */
  result(id: string): Promise<HostResult> {
    const known = this.results.get(id);
    if (known) return Promise.resolve(known);
    return new Promise((resolve) => {
      const listener = (result: HostResult) => {
        if (result.id !== id) return;
        this.off('result', listener);
        resolve(result);
      };
      this.on('result', listener);
    });
  }

  /** The crash under test: SIGKILL, no cleanup, no flush. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  async close(): Promise<void> {
    await this.call('close').catch(() => {});
    await this.exited;
  }
}
