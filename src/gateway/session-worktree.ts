/**
 * The worktree a gateway session works in (a `worktree: true` model, docs/gateway.md): the session's
 * first turn asks the broker for a new worktree from the model's base; each later turn is a
 * follow-up of the turn before (`worktree.reuse`), in the same worktree, linked to it (one thread
 * in the panel), its change recorded against the base as for any coding task.
 *
 * Turns of one session take their turn: each waits until the task before it has ended and its
 * processes are gone — then its change is recorded (the broker does that before `finished`) — so a
 * client that sends its next turn the moment an answer arrives, or two at once, never has two agents
 * in one worktree, nor a change recorded while the next agent edits.
 */
import type { TaskHandle } from '../client/index.js';
import type { WorktreeRequest } from '../model/change.js';

interface Ran {
  /** The task that last worked in the worktree. */
  taskId: string;
  /** Its processes are gone and its change is recorded. */
  finished: Promise<void>;
}

export interface WorktreeTurn {
  /** The spec's `worktree` for this turn's task. */
  request: WorktreeRequest;
  /** The turn is over: `task` is what it submitted (if anything); the next turn follows it up if it got a worktree. */
  done(task: TaskHandle | undefined): void;
}

export class SessionWorktree {
  private last: Promise<Ran | undefined> = Promise.resolve(undefined);

  constructor(private readonly base: string | undefined) {}

  /** Waits for the session's turn (rejects with the signal's reason when it aborts first). */
  async turn(signal: AbortSignal): Promise<WorktreeTurn> {
    const before = this.last;
    let hand!: (ran: Ran | undefined | Promise<Ran | undefined>) => void;
    this.last = new Promise((resolve) => (hand = resolve));
    let handed = false;
    const done = (task: TaskHandle | undefined): void => {
      if (handed) return;
      handed = true;
      hand(task && ranInWorktree(task) ? { taskId: task.id, finished: task.finished.catch(() => {}) } : before);
    };
    let previous: Ran | undefined;
    try {
      previous = await untilAborted(
        before.then(async (ran) => {
          await ran?.finished;
          return ran;
        }),
        signal,
      );
    } catch (error) {
      done(undefined);
      throw error;
    }
    const request: WorktreeRequest = previous ? { reuse: previous.taskId } : this.base === undefined ? {} : { base: this.base };
    return { request, done };
  }
}

/** The task got its worktree (a task that failed before, e.g. on a base gone since, has none to continue in). */
function ranInWorktree(task: TaskHandle): boolean {
  try {
    return task.snapshot().worktree !== undefined;
  } catch {
    return false;
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}
