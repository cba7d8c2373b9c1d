/** What the hub's call families share: finding a task, the broker's errors in the bridge's codes, a started task's handle. */
import { BridgeError, fromCoreError } from '../../model/errors.js';
import type { TaskSnapshot } from '../../model/task.js';
import type { BrokerLike, StartedTask } from '../broker-like.js';

/** The task `id`, or a `not_found` BridgeError. */
export function requireTask(broker: BrokerLike, id: string): TaskSnapshot {
  const task = broker.get(id);
  if (!task) throw new BridgeError('not_found', `No task with id ${id}`);
  return task;
}

/** Broker errors carry a code; the one table (`BROKER_ERROR_CODES`) says which bridge code each is. */
export function translate(error: unknown): never {
  throw fromCoreError(error);
}

/** A task `start` began, its errors translated; its outcome is left to the updates. */
export function handleOf(start: () => StartedTask): { id: string; accepted: Promise<void> } {
  let handle: StartedTask;
  try {
    handle = start();
  } catch (error) {
    translate(error);
  }
  // The outcome reaches the panel through updates; an unobserved rejection must not crash the host.
  handle.result.catch(() => {});
  return { id: handle.id, accepted: handle.accepted ?? Promise.resolve() };
}
