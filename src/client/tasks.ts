/**
 * The one task seam every front-end uses (`run`, `wait`, `logs -f`, MCP, the gateway): start a task,
 * or follow one, and get the same handle — result promise, updates in order, cancel, answer — whether
 * it runs in this process (`localTasks`) or on the hub (./hub-tasks.ts). On the hub a handle is fed by
 * the task's own follow stream (uncoalesced, in order), never by the panel's all-task stream.
 *
 * Which one a front-end gets is one policy, `openTasks` (./open.ts): the hub when one runs, else a
 * broker in this process.
 */
import type { TaskBroker } from '../broker/broker.js';
import type { TaskHandle } from '../broker/types.js';
import { BridgeError } from '../bridge/calls.js';
import { isFinished, type TaskSpec, type TaskUpdate } from '../model/task.js';
import { FedTask } from './fed-task.js';

export interface TaskCounts {
  running: number;
  queued: number;
}

/** A task started or followed through the seam. */
export interface TaskRun extends TaskHandle {
  /** Answers the agent's pending question `askId`; rejects when it no longer waits for it. */
  answer(askId: string, text: string): Promise<void>;
}

/** Where a front-end's tasks run. */
export interface TaskService {
  /** `'hub'` with the control endpoint's path, or `'local'` (a broker in this process). */
  readonly where: { kind: 'hub'; path: string } | { kind: 'local' };
  submit(spec: TaskSpec): Promise<TaskRun>;
  /** The handle of an existing task (rejects with a `not_found` BridgeError for an unknown id). */
  follow(id: string): Promise<TaskRun>;
  /** Running and queued tasks of whoever runs them (a hub's are all of the hub's). */
  counts(): Promise<TaskCounts>;
  /** Lets go of the hub connection (a local service leaves its broker to its owner). */
  close(): Promise<void>;
}

/** A broker in this process as a `TaskService`. */
export function localTasks(broker: TaskBroker): TaskService {
  const answer = async (id: string, askId: string, text: string): Promise<void> => {
    if (!broker.answer(id, askId, text)) throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
  };
  return {
    where: { kind: 'local' },
    async submit(spec) {
      const handle = broker.submit(spec);
      return { ...handle, answer: (askId, text) => answer(handle.id, askId, text) };
    },
    async follow(id) {
      const snapshot = broker.get(id);
      if (!snapshot) throw new BridgeError('not_found', `No task with id ${id}`);
      const task = new FedTask({ cancel: async (taskId, reason) => void broker.cancel(taskId, reason), answer }, id);
      const onUpdate = (update: TaskUpdate): void => {
        if (update.taskId !== id) return;
        const now = broker.get(id);
        if (now) task.receive({ task: now, update });
        if (update.kind === 'exited') broker.off('update', onUpdate);
      };
      task.receive({ task: snapshot });
      if (isFinished(snapshot.state)) task.end();
      else broker.on('update', onUpdate);
      return task;
    },
    counts: async () => {
      const { running, queued } = broker.stats();
      return { running, queued };
    },
    close: async () => {},
  };
}
