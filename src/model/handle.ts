/**
 * A submitted task's handle: what `TaskBroker.submit` returns and every front-end holds (through the
 * client, a local broker's task and a hub's alike), declared here so front-ends read it from the
 * task model, not from the core.
 */
import type { FinalPayload } from '../protocol/index.js';
import type { TaskSnapshot, TaskUpdate } from './task.js';

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
