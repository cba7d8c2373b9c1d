/**
 * A real TaskBroker in a private temporary directory, plus a helper that runs one task to its end
 * and records what the panel would have seen (partials, questions, the final payload or error).
 */
import { TaskError, type BrokerOptions, type TaskBroker, type TaskHandle } from '../../src/broker/index.js';
import type { FinalPayload, Payload } from '../../src/protocol/index.js';
import type { TaskSnapshot, TaskSpec, TaskUpdate } from '../../src/model/task.js';
import { createTestBroker, type TestBroker } from './core.js';

export type { TestBroker };

/** A ready broker with the library's own grace periods, closed by the caller (the one factory, see core.ts). */
export async function startBroker(options: BrokerOptions = {}): Promise<TestBroker> {
  const testBroker = createTestBroker(options, { scope: 'manual', shortGrace: false });
  await testBroker.broker.ready;
  return testBroker;
}

export interface Finished {
  handle: TaskHandle;
  /** The success payload, when the task succeeded. */
  payload?: FinalPayload;
  /** The TaskError, when it did not. */
  error?: TaskError;
  partials: Payload[];
  updates: TaskUpdate[];
  snapshot: TaskSnapshot;
}

export interface Running {
  handle: TaskHandle;
  partials: Payload[];
  updates: TaskUpdate[];
  /** Settles when the task has ended and its processes are gone. */
  done: Promise<Finished>;
}

export function startTask(broker: TaskBroker, spec: TaskSpec, onUpdate?: (update: TaskUpdate, handle: TaskHandle) => void): Running {
  const handle = broker.submit(spec);
  const partials: Payload[] = [];
  const updates: TaskUpdate[] = [];
  handle.on('update', (update) => {
    updates.push(update);
    if (update.kind === 'partial' && update.payload) partials.push(update.payload);
    onUpdate?.(update, handle);
  });
  const done = (async (): Promise<Finished> => {
    let payload: FinalPayload | undefined;
    let error: TaskError | undefined;
    try {
      payload = await handle.result;
    } catch (caught) {
      if (!TaskError.is(caught)) throw caught;
      error = caught;
    }
    await handle.finished;
    return { handle, payload, error, partials, updates, snapshot: handle.snapshot() };
  })();
  return { handle, partials, updates, done };
}

export function runTask(
  broker: TaskBroker,
  spec: TaskSpec,
  onUpdate?: (update: TaskUpdate, handle: TaskHandle) => void,
): Promise<Finished> {
  return startTask(broker, spec, onUpdate).done;
}
