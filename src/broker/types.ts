/** The shapes of the broker's public API: the handle of a submitted task, its events, its statistics. */
import type { FinalPayload } from '../protocol/index.js';
import type { TaskSnapshot, TaskUpdate } from '../model/task.js';

export type { BrokerStats } from './history/registry.js';

export interface TaskHandle {
  readonly id: string;
  /**
   * Resolves once the task is on disk (its `queued` record fsynced; at once without a data
   * directory): a submission acknowledged after it survives a crash of the broker. Never rejects.
   */
  readonly accepted?: Promise<void>;
  /** Resolves with the `success` payload; rejects with a TaskError otherwise. */
  readonly result: Promise<FinalPayload>;
  /** Resolves when the task's processes are gone and its endpoints removed. */
  readonly finished: Promise<void>;
  cancel(reason?: string): void;
  on(event: 'update', listener: (update: TaskUpdate) => void): () => void;
  snapshot(): TaskSnapshot;
}

/** The broker's events; `on`/`off`/`emit` are typed from this map. */
export interface BrokerEvents {
  /** Every task change. */
  update: [update: TaskUpdate];
  /** Something the broker could not do but survived (e.g. history cannot be written). */
  warning: [message: string];
  /** The queue was paused (`true`) or resumed (`false`). */
  paused: [paused: boolean];
  /** Finished tasks that left memory (the history limit): `tasks()`/`get()` no longer know them. */
  removed: [taskIds: string[]];
}
