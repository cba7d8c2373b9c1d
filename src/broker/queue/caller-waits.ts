/**
 * Runs waiting on their caller do not hold the queue's slots (Y4). A task that calls a tool its
 * caller hosts (a bridged gateway run asking its client to edit a file) waits on that client — a
 * permission prompt, a closed editor — and uses no CPU meanwhile. While it waits, its slot is lent
 * to the queue (the queue's concurrency is raised by one), so the owner's other tasks start; once
 * the call is answered (or the task ends) the slot is taken back. At most `maxLent` slots are lent
 * at once (the concurrency itself): a flood of waiting runs cannot start unbounded processes.
 */
import type { TaskUpdate } from '../../model/task.js';

/** The queue's side: its concurrency, which p-queue lets change while it runs. */
export interface ConcurrencyDial {
  concurrency: number;
}

/** Update kinds after which a task's waiting on its caller may have changed. */
const WAIT_CHANGES: ReadonlySet<TaskUpdate['kind']> = new Set(['tool_call', 'tool_result', 'ended', 'retrying', 'started']);

export class CallerWaits {
  readonly #lent = new Set<string>();

  constructor(
    private readonly queue: ConcurrencyDial,
    private readonly maxLent: number,
    /** Whether the task still runs and waits on a call its caller has not answered. */
    private readonly waiting: (taskId: string) => boolean,
  ) {}

  /** How many slots are lent now. */
  get lent(): number {
    return this.#lent.size;
  }

  /** Feed it every update of the broker's tasks. */
  readonly observe = (update: TaskUpdate): void => {
    if (!WAIT_CHANGES.has(update.kind)) return;
    const id = update.taskId;
    // A run starts (or waits to retry) with no call pending (an attempt's calls are dropped at its end):
    // one not lent stays so, without asking `waiting` (a look at the task) for every task that starts.
    if ((update.kind === 'started' || update.kind === 'retrying') && !this.#lent.has(id)) return;
    const waits = update.kind !== 'ended' && this.waiting(id);
    if (waits && !this.#lent.has(id) && this.#lent.size < this.maxLent) {
      this.#lent.add(id);
      this.queue.concurrency += 1;
    } else if (!waits && this.#lent.delete(id)) {
      this.queue.concurrency -= 1;
    }
  };
}
