/**
 * Turns a TaskBroker into the panel's `BackchannelBridge`. Electron-free: the headless HTTP server
 * and the Electron IPC handlers both serve this one object, so they answer every call the same way.
 *
 * The broker emits an update for every line a chatty agent sends; this layer coalesces them into at
 * most one `BridgeEvent` per `flushIntervalMs`, carrying each changed task once.
 */
import type { BackchannelBridge, BridgeEvent, BridgeInfo, SubmitRequest, TaskDetails, TemplateInfo } from '../bridge/contract.js';
import { BridgeError } from '../bridge/calls.js';
import type { LogLine, TaskSnapshot, TaskSpec, TaskUpdate } from '../model/task.js';
import { FINISHED_STATES } from '../model/task.js';

/** The part of `TaskBroker` the bridge uses (structural, so tests and adapters can provide it). */
export interface BrokerLike {
  submit(spec: TaskSpec): { id: string; result: Promise<unknown> };
  tasks(): TaskSnapshot[];
  get(id: string): TaskSnapshot | undefined;
  logOf(id: string): LogLine[];
  cancel(id: string): boolean;
  retry(id: string): { id: string; result: Promise<unknown> };
  answer(id: string, askId: string, text: string): boolean;
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  on(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  on(event: 'paused', listener: (paused: boolean) => void): unknown;
  off?(event: 'update', listener: (update: TaskUpdate) => void): unknown;
  off?(event: 'paused', listener: (paused: boolean) => void): unknown;
}

export interface BrokerBridgeOptions {
  mode: BridgeInfo['mode'];
  version: string;
  logPath: string;
  templates?: TemplateInfo[];
  /**
   * Minimum time between two events. 100 ms keeps the panel at ≤ 10 renders a second however
   * many tasks report. @default 100
   */
  flushIntervalMs?: number;
  /** How many distinct recent command lines `info()` lists. @default 8 */
  recentLimit?: number;
  /** Electron opens the log in the OS; headless leaves it undefined and only returns the path. */
  openLog?: (path: string) => Promise<void>;
  /** Called when a listener throws (the bridge keeps going). */
  onListenerError?: (error: unknown) => void;
}

export interface BrokerBridge extends BackchannelBridge {
  /** Stops listening to the broker and drops every subscriber. Does not close the broker. */
  close(): void;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 100;

interface Subscriber {
  listener: (event: BridgeEvent) => void;
  /** Still owed the initial full picture. */
  needsFull: boolean;
}

export function createBrokerBridge(broker: BrokerLike, options: BrokerBridgeOptions): BrokerBridge {
  const flushIntervalMs = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  const recentLimit = options.recentLimit ?? 8;
  const subscribers = new Set<Subscriber>();
  const dirty = new Set<string>();
  let lastPaused = broker.paused;
  let pausedDirty = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastFlushAt = 0;
  let closed = false;

  const onUpdate = (update: TaskUpdate): void => {
    if (subscribers.size === 0) return;
    dirty.add(update.taskId);
    schedule();
  };
  // The flush notices the new `broker.paused` itself; this only makes sure a flush comes.
  const onPaused = (): void => {
    if (subscribers.size > 0) schedule();
  };
  const detach = broker.on('update', onUpdate);
  broker.on('paused', onPaused);

  function schedule(): void {
    if (timer !== undefined || closed) return;
    const wait = Math.max(0, lastFlushAt + flushIntervalMs - Date.now());
    timer = setTimeout(flush, wait);
    timer.unref?.();
  }

  function flush(): void {
    timer = undefined;
    lastFlushAt = Date.now();
    if (broker.paused !== lastPaused) {
      lastPaused = broker.paused;
      pausedDirty = true;
    }
    const changed: TaskSnapshot[] = [];
    for (const id of dirty) {
      const task = broker.get(id);
      if (task) changed.push(task);
    }
    dirty.clear();
    let all: TaskSnapshot[] | undefined;
    for (const subscriber of subscribers) {
      let event: BridgeEvent;
      if (subscriber.needsFull) {
        subscriber.needsFull = false;
        all ??= broker.tasks();
        event = { tasks: all, full: true, paused: lastPaused };
      } else if (changed.length > 0 || pausedDirty) {
        event = { tasks: changed };
        if (pausedDirty) event.paused = lastPaused;
      } else {
        continue;
      }
      try {
        subscriber.listener(event);
      } catch (error) {
        options.onListenerError?.(error);
      }
    }
    pausedDirty = false;
  }

  function requireTask(id: string): TaskSnapshot {
    const task = broker.get(id);
    if (!task) throw new BridgeError('not_found', `No task with id ${id}`);
    return task;
  }

  function recent(): SubmitRequest[] {
    const seen = new Set<string>();
    const out: SubmitRequest[] = [];
    const tasks = [...broker.tasks()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    for (const task of tasks) {
      const key = JSON.stringify([task.command, task.args, task.cwd]);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ command: task.command, args: task.args, cwd: task.cwd, label: task.label });
      if (out.length >= recentLimit) break;
    }
    return out;
  }

  function toSpec(request: SubmitRequest): TaskSpec {
    const spec: TaskSpec = { command: request.command };
    if (request.args !== undefined) spec.args = request.args;
    if (request.cwd !== undefined) spec.cwd = request.cwd;
    if (request.label !== undefined) spec.label = request.label;
    if (request.input !== undefined) spec.input = request.input;
    if (request.timeoutMs !== undefined) spec.timeoutMs = request.timeoutMs;
    if (request.heartbeatTimeoutMs !== undefined) spec.heartbeatTimeoutMs = request.heartbeatTimeoutMs;
    if (request.retries !== undefined) spec.retries = request.retries;
    spec.tags = { source: 'panel' };
    return spec;
  }

  /** Broker errors carry a code; map the ones a person can cause onto the bridge's error codes. */
  function translate(error: unknown): never {
    if (BridgeError.is(error)) throw error;
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === 'unknown_task') throw new BridgeError('not_found', message);
    if (code === 'not_retryable' || code === 'closed') throw new BridgeError('conflict', message);
    if (code === 'invalid_option') throw new BridgeError('invalid_request', message);
    throw new BridgeError('internal', message);
  }

  function handleOf(start: () => { id: string; result: Promise<unknown> }): { id: string } {
    let handle: { id: string; result: Promise<unknown> };
    try {
      handle = start();
    } catch (error) {
      translate(error);
    }
    // The outcome reaches the panel through updates; an unobserved rejection must not crash the host.
    handle.result.catch(() => {});
    return { id: handle.id };
  }

  const bridge: BrokerBridge = {
    async info() {
      return {
        version: options.version,
        mode: options.mode,
        logPath: options.logPath,
        paused: broker.paused,
        templates: options.templates ?? [],
        recent: recent(),
      };
    },
    async listTasks() {
      return broker.tasks();
    },
    async getTask(id): Promise<TaskDetails> {
      const task = requireTask(id);
      return { task, log: broker.logOf(id) };
    },
    subscribe(listener) {
      if (closed) return () => {};
      const subscriber: Subscriber = { listener, needsFull: true };
      subscribers.add(subscriber);
      schedule();
      return () => {
        subscribers.delete(subscriber);
      };
    },
    async submit(request) {
      return handleOf(() => broker.submit(toSpec(request)));
    },
    async cancel(id) {
      const task = requireTask(id);
      if (FINISHED_STATES.includes(task.state)) {
        throw new BridgeError('conflict', `Task ${id} already ended (${task.state}); there is nothing to cancel`);
      }
      if (!broker.cancel(id)) throw new BridgeError('conflict', `Task ${id} could not be cancelled (${task.state})`);
    },
    async retry(id) {
      const task = requireTask(id);
      if (!FINISHED_STATES.includes(task.state)) {
        throw new BridgeError('conflict', `Task ${id} is still ${task.state}; retry it once it has ended`);
      }
      return handleOf(() => broker.retry(id));
    },
    async answer(id, askId, text) {
      const task = requireTask(id);
      if (task.pendingQuestion?.askId !== askId) {
        throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
      }
      if (!broker.answer(id, askId, text)) throw new BridgeError('conflict', `Task ${id} no longer waits for "${askId}"`);
    },
    async setPaused(paused) {
      if (paused) broker.pause();
      else broker.resume();
      if (subscribers.size > 0) schedule();
    },
    async openLog() {
      await options.openLog?.(options.logPath);
      return { path: options.logPath };
    },
    close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      subscribers.clear();
      if (typeof detach === 'function') (detach as () => void)();
      else broker.off?.('update', onUpdate);
      broker.off?.('paused', onPaused);
    },
  };
  return bridge;
}
