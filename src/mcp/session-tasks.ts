/**
 * The tasks this MCP session started (start_task, run_task), each followed by its own handle
 * (`client.follow(id)`: the task's ordered stream — on the hub its own follow stream, never the
 * panel's all-task stream). Every change of one goes to the session's notices: its MCP task status,
 * a progress notification when its progress or partial moved, an elicitation for a new question.
 * A handle is stopped when its task ends (or its stream does) and all of them when the session ends.
 */
import type { BackchannelClient, TaskRun } from '../client/index.js';
import { isFinished, type TaskSnapshot } from '../model/task.js';
import type { Notices } from './notices.js';

interface Tracked {
  progressToken?: string | number;
  /** The progress and partial last notified, to send a notification only when they moved. */
  lastProgress?: string;
  /** The question last put to the person (elicitation), to put each one once. */
  askedId?: string;
  /** The task's handle, once following it has begun. */
  run?: TaskRun;
}

export class SessionTasks {
  readonly #tracked = new Map<string, Tracked>();
  #closed = false;

  constructor(
    private readonly client: Pick<BackchannelClient, 'follow'>,
    private readonly notices: Notices,
  ) {}

  /** True while `taskId` is a task of this session that has not ended. */
  has(taskId: string): boolean {
    return this.#tracked.has(taskId);
  }

  /** Follows `taskId` until it ends; its progress notifications go to `progressToken`. */
  track(taskId: string, progressToken?: string | number): void {
    if (this.#closed) return;
    this.#tracked.get(taskId)?.run?.stop();
    const entry: Tracked = progressToken !== undefined ? { progressToken } : {};
    this.#tracked.set(taskId, entry);
    void this.#follow(taskId, entry);
  }

  /** Stops every handle (the tasks go on: they are the hub's). */
  dispose(): void {
    this.#closed = true;
    for (const entry of this.#tracked.values()) entry.run?.stop();
    this.#tracked.clear();
  }

  async #follow(taskId: string, entry: Tracked): Promise<void> {
    let run: TaskRun;
    try {
      run = await this.client.follow(taskId);
    } catch {
      // Gone already (or the hub is): nothing to follow; the tools still answer for it.
      return this.#untrack(taskId, entry);
    }
    if (this.#tracked.get(taskId) !== entry) return run.stop(); // the session ended, or tracks it anew, meanwhile
    entry.run = run;
    run.on('update', () => this.#changed(taskId, entry, run.snapshot()));
    void run.finished.then(() => this.#untrack(taskId, entry));
    this.#changed(taskId, entry, run.snapshot());
  }

  #changed(taskId: string, entry: Tracked, task: TaskSnapshot): void {
    if (this.#tracked.get(taskId) !== entry) return;
    this.notices.status(task);
    const key = `${task.progress}:${JSON.stringify(task.lastPartial ?? null).slice(0, 200)}`;
    if (key !== entry.lastProgress) {
      entry.lastProgress = key;
      this.notices.progress(entry.progressToken, task);
    }
    if (task.pendingQuestion && task.pendingQuestion.askId !== entry.askedId) {
      entry.askedId = task.pendingQuestion.askId;
      void this.notices.elicit(task);
    }
    if (isFinished(task.state)) this.#untrack(taskId, entry);
  }

  #untrack(taskId: string, entry: Tracked): void {
    entry.run?.stop();
    if (this.#tracked.get(taskId) === entry) this.#tracked.delete(taskId);
  }
}
