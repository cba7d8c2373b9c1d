/**
 * Turns a broker (`BrokerLike`, ./broker-like.ts) into the panel's `BackchannelBridge`. Electron-free:
 * the headless HTTP server and the Electron IPC handlers both serve this one object, so they answer
 * every call the same way.
 *
 * This file assembles the bridge: events go through an `UpdateCoalescer` (./update-coalescer.ts),
 * one task's feed is ./task-feed.ts, and the calls are ./calls/, one file per family — tasks,
 * answers, coding changes, schedules, the host — each a few lines over the broker, with broker
 * errors translated into the bridge's error codes.
 */
import type { BackchannelBridge, BridgeInfo, PresetInfo, SubmitRequest, TaskFeedEvent } from '../bridge/contract.js';
import type { TaskUpdate } from '../model/task.js';
import { listenToUpdates, type BrokerLike } from './broker-like.js';
import { answerCalls } from './calls/answers.js';
import { changeCalls } from './calls/changes.js';
import { hostCalls } from './calls/host.js';
import { scheduleCalls, type SchedulerLike } from './calls/schedules.js';
import { readCalls, taskCalls, wholeResultCall, type WholeResults } from './calls/tasks.js';
import { followSubmission, watchTask } from './task-feed.js';
import { UpdateCoalescer } from './update-coalescer.js';

export type { BrokerLike, CodingLike, StartedTask, TaskPicture } from './broker-like.js';
export { NO_SCHEDULER, type SchedulerLike } from './calls/schedules.js';
export { noToolCall } from './calls/answers.js';
export { notAnnotatable, type WholeResult, type WholeResults } from './calls/tasks.js';

export interface BrokerBridgeOptions {
  mode: BridgeInfo['mode'];
  version: string;
  logPath: string;
  /** What the panel's "New task" offers. @default [] */
  presets?: PresetInfo[];
  /**
   * Minimum time between two events: one frame (16 ms), so a change reaches the panel by its next
   * frame. @default 16
   */
  flushIntervalMs?: number;
  /**
   * Time between two events while the broker's event loop runs late (saturated): the panel then
   * gets ≤ 10 events a second however many tasks report. @default 100
   */
  busyFlushIntervalMs?: number;
  /** How many distinct recent command lines `info()` lists. @default 8 */
  recentLimit?: number;
  /** Electron opens the log in the OS; headless leaves it undefined and only returns the path. */
  openLog?: (path: string) => Promise<void>;
  /** Called when a listener throws (the bridge keeps going). */
  onListenerError?: (error: unknown) => void;
  /**
   * The hub's scheduler (./scheduler.ts), which the schedule calls read and change; absent (a broker
   * of a front-end's own, the history): every schedule call is refused with NO_SCHEDULER.
   */
  scheduler?: SchedulerLike;
}

export interface BrokerBridge extends BackchannelBridge, WholeResults {
  /**
   * Submits a task and calls `listener` with every change of it, not coalesced (see
   * `TaskFeedEvent`): first its picture, then each update with the picture after it, the last one
   * `exited`. `stop()` ends the listening, not the task. Throws like `submit`.
   */
  submitAndFollow(request: SubmitRequest, listener: (event: TaskFeedEvent) => void): { id: string; stop(): void };
  /**
   * Calls `listener` with every change of the existing task `id`, as `submitAndFollow` does: first its
   * picture, then each update. Throws a `not_found` BridgeError for an unknown id.
   */
  watch(id: string, listener: (event: TaskFeedEvent) => void): { stop(): void };
  /** Stops listening to the broker and drops every subscriber. Does not close the broker. */
  close(): void;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 16;
export const DEFAULT_BUSY_FLUSH_INTERVAL_MS = 100;

export function createBrokerBridge(broker: BrokerLike, options: BrokerBridgeOptions): BrokerBridge {
  const events = new UpdateCoalescer(broker, {
    flushIntervalMs: options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS,
    busyFlushIntervalMs: Math.max(options.busyFlushIntervalMs ?? DEFAULT_BUSY_FLUSH_INTERVAL_MS, options.flushIntervalMs ?? 0),
    onListenerError: options.onListenerError,
  });
  const detach = listenToBroker(broker, events);
  let closed = false;
  return {
    ...hostCalls(broker, options),
    ...readCalls(broker),
    ...wholeResultCall(broker),
    ...taskCalls(broker),
    ...answerCalls(broker),
    ...changeCalls(broker),
    ...scheduleCalls(broker, options.scheduler, options.presets ?? []),
    subscribe: (listener) => events.subscribe(listener),
    async setPaused(paused) {
      if (paused) broker.pause();
      else broker.resume();
      events.poke();
    },
    submitAndFollow: (request, listener) => followSubmission(broker, request, listener),
    watch: (id, listener) => watchTask(broker, id, listener),
    close() {
      if (closed) return;
      closed = true;
      events.close();
      detach();
    },
  };
}

/** Feeds the broker's events to the coalescer; returns the function that stops it. */
function listenToBroker(broker: BrokerLike, events: UpdateCoalescer): () => void {
  const stopUpdates = listenToUpdates(broker, (update: TaskUpdate) => events.taskChanged(update.taskId));
  // The flush notices the new `broker.paused` itself; this only makes sure a flush comes.
  const onPaused = (): void => events.poke();
  const onRemoved = (taskIds: string[]): void => events.tasksRemoved(taskIds);
  broker.on('paused', onPaused);
  broker.on('removed', onRemoved);
  return () => {
    stopUpdates();
    broker.off?.('paused', onPaused);
    broker.off?.('removed', onRemoved);
  };
}
