/** The in-process side of the task seam (./tasks.ts): a broker in this process as a `TaskService`. */
import type { TaskBroker } from '../broker/broker.js';
import { BridgeError } from '../bridge/calls.js';
import { isFinished, type TaskUpdate } from '../model/task.js';
import { FedTask } from './fed-task.js';
import type { TaskService } from './tasks.js';
import { registryChanges } from './changes.js';

/** A broker in this process as a `TaskService`. */
export function localTasks(broker: TaskBroker): TaskService {
  const answer = async (id: string, askId: string, text: string): Promise<void> => {
    if (!broker.answer(id, askId, text)) throw new BridgeError('conflict', `Task ${id} is not waiting for an answer to "${askId}"`);
  };
  return {
    where: { kind: 'local' },
    async submit(spec) {
      const handle = broker.submit(spec);
      return { ...handle, answer: (askId, text) => answer(handle.id, askId, text), stop: () => {} };
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
      task.feedBy(() => broker.off('update', onUpdate));
      if (isFinished(snapshot.state)) task.end();
      else broker.on('update', onUpdate);
      return task;
    },
    counts: async () => {
      const { running, queued } = broker.stats();
      return { running, queued };
    },
    changes: broker.worktrees
      ? registryChanges({
          change: (id) => broker.change(id),
          apply: (ids) => broker.applyChanges(ids),
          discard: (id) => broker.discardChange(id),
          keepBranch: (id) => broker.keepBranch(id),
          list: () => broker.worktreeList(),
        })
      : noChanges(),
    close: async () => {},
  };
}

/** A broker without a place for worktrees has no changes: every call says so. */
function noChanges(): TaskService['changes'] {
  const refuse = async (): Promise<never> => {
    throw new BridgeError('not_found', 'This broker keeps no worktrees');
  };
  return { change: refuse, apply: refuse, discard: refuse, keepBranch: refuse, list: async () => [], resolve: refuse };
}
