/**
 * One task's feed (`submitAndFollow`, `watch`): every change of one task, not coalesced, as
 * `TaskFeedEvent`s — its picture first, then each update with the picture after it. The picture
 * comes with the update (`TaskPicture`): the feed does not read the broker back for each one.
 */
import type { SubmitRequest, TaskFeedEvent } from '../bridge/contract.js';
import { BridgeError } from '../model/errors.js';
import type { FinalPayload } from '../protocol/index.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';
import { listenToUpdates, type BrokerLike, type TaskPicture } from './broker-like.js';
import { handleOf } from './calls/common.js';
import { toSpec } from './calls/tasks.js';

type Listener = (event: TaskFeedEvent) => void;

/** Submits `request` and feeds `listener` every change of the task, once it is durable. Throws like `submit`. */
export function followSubmission(broker: BrokerLike, request: SubmitRequest, listener: Listener): { id: string; stop(): void } {
  // Listening starts before the submit: the broker reports `queued` (and may report more) inside it.
  const feed = taskFeed(broker, listener);
  let started: { id: string; accepted: Promise<void> };
  try {
    started = handleOf(() => broker.submit(toSpec(request)));
  } catch (error) {
    feed.stop();
    throw error;
  }
  // The follower learns of its task (its id, the first event) only once the task is durable: a
  // crash right after cannot lose a task its caller was told about. Updates meanwhile are held.
  let stopped = false;
  void started.accepted.then(() => stopped || feed.start(started.id));
  return {
    id: started.id,
    stop: () => {
      stopped = true;
      feed.stop();
    },
  };
}

/** Feeds `listener` every change of the existing task `id`; a `not_found` BridgeError for an unknown one. */
export function watchTask(broker: BrokerLike, id: string, listener: Listener): { stop(): void } {
  const task = broker.get(id);
  if (!task) throw new BridgeError('not_found', `No task with id ${id}`);
  const feed = taskFeed(broker, listener);
  feed.start(id, task);
  return { stop: feed.stop };
}

/**
 * One task's updates as `TaskFeedEvent`s: listening starts at once (updates of the task that come
 * before `start(id)` are held), `start` sends the task's picture, then the held updates, then each
 * new one as it comes, each with the picture its update carries.
 */
function taskFeed(broker: BrokerLike, listener: Listener): { start(id: string, now?: TaskSnapshot): void; stop(): void } {
  let id: string | undefined;
  const early: Array<[TaskUpdate, TaskPicture | undefined]> = [];
  // A broker whose updates carry no picture (a structural stand-in) is asked, as before.
  const pictureOf = (picture: TaskPicture | undefined): TaskSnapshot | undefined => (picture ? picture() : broker.get(id!));
  const onUpdate = (update: TaskUpdate, picture?: TaskPicture): void => {
    if (id === undefined) early.push([update, picture]);
    else if (update.taskId === id) sendUpdate(listener, update, pictureOf(picture));
  };
  const stop = listenToUpdates(broker, onUpdate);
  return {
    start(taskId, now = broker.get(taskId)) {
      id = taskId;
      if (now) listener({ task: now });
      for (const [update, picture] of early.splice(0)) if (update.taskId === id) sendUpdate(listener, update, pictureOf(picture));
    },
    stop,
  };
}

/** One update with the picture after it; the result a follower waits for comes whole, once. */
function sendUpdate(listener: Listener, update: TaskUpdate, task: TaskSnapshot | undefined): void {
  if (!task) return;
  if (update.kind === 'ended' && update.payload) {
    // The follower waits for this very result: it gets it whole (also a big one), once — in
    // `task.result`, not again as the update's payload.
    const result = task.result ?? (task.resultSummary ? (update.payload as FinalPayload) : undefined);
    if (result) return listener({ task: { ...task, result }, update: { ...update, payload: undefined } });
  }
  listener({ task, update });
}
