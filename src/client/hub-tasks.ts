/**
 * Tasks of a request-serving front-end (the gateway) run on the hub: each is submitted over the
 * control endpoint and followed there (`HubClient.follow`), so it shows in the hub's panel and
 * history while this process relays its output. The handles are the broker's `TaskHandle` shape, so
 * the request runner cannot tell them from local tasks.
 *
 * When the hub goes away, a running request fails with `HubLostError` (its task stream broke) and
 * the next one looks for a hub again: a restarted hub is picked up, none is a clear error.
 */
import type { TaskFeedEvent } from '../bridge/contract.js';
import { HubLostError, type FollowedSubmission, type HubClient } from './hub-client.js';
import { TaskError } from '../broker/errors.js';
import type { FinalPayload } from '../protocol/index.js';
import type { TaskSnapshot, TaskSpec, TaskUpdate } from '../model/task.js';
import { requestForHub } from './submit-request.js';
import type { TaskCounts, TaskRun, TaskService } from './tasks.js';

export class HubTasks implements TaskService {
  #hub: HubClient | undefined;
  /** Where the hub was, for the message when none answers any more. */
  #lastPath: string;

  /** `find` looks for a running hub (undefined: none runs); called again after one was lost. */
  constructor(
    hub: HubClient,
    private readonly find: () => Promise<HubClient | undefined>,
  ) {
    this.#hub = hub;
    this.#lastPath = hub.path;
  }

  /** The control endpoint in use (or last used). */
  get path(): string {
    return this.#hub?.path ?? this.#lastPath;
  }

  get where(): { kind: 'hub'; path: string } {
    return { kind: 'hub', path: this.path };
  }

  async submit(spec: TaskSpec): Promise<TaskRun> {
    const hub = await this.#connected();
    const task = new HubTask();
    const followed = hub.follow(requestForHub(spec), (event) => task.receive(event));
    task.attach(hub, followed);
    try {
      await followed.id;
    } catch (error) {
      this.#forgetIfLost(hub, error);
      throw error;
    }
    followed.ended.catch((error: unknown) => this.#forgetIfLost(hub, error));
    return task;
  }

  async counts(): Promise<TaskCounts> {
    const hub = await this.#connected();
    try {
      const tasks = await hub.listTasks();
      return {
        running: tasks.filter((t) => t.state === 'running').length,
        queued: tasks.filter((t) => t.state === 'queued').length,
      };
    } catch (error) {
      this.#forgetIfLost(hub, error);
      throw error;
    }
  }

  close(): void {
    this.#hub?.close();
    this.#hub = undefined;
  }

  async #connected(): Promise<HubClient> {
    this.#hub ??= await this.find();
    if (!this.#hub) {
      throw new HubLostError(
        this.#lastPath,
        'nothing listens there any more (start the desktop app or `backchannel serve` again, or use --local)',
      );
    }
    this.#lastPath = this.#hub.path;
    return this.#hub;
  }

  #forgetIfLost(hub: HubClient, error: unknown): void {
    if (!(error instanceof HubLostError) || this.#hub !== hub) return;
    hub.close();
    this.#hub = undefined;
  }
}

/** One hub task as a `TaskHandle`, fed by its followed stream. */
class HubTask implements TaskRun {
  #id = '';
  #snapshot: TaskSnapshot | undefined;
  #hub: HubClient | undefined;
  readonly #listeners = new Set<(update: TaskUpdate) => void>();
  readonly result: Promise<FinalPayload>;
  readonly finished: Promise<void>;
  #settle!: { resolve(payload: FinalPayload): void; reject(error: Error): void };
  #exited!: () => void;

  constructor() {
    this.result = new Promise<FinalPayload>((resolve, reject) => (this.#settle = { resolve, reject }));
    this.result.catch(() => {}); // awaited by the runner; never an unhandled rejection meanwhile
    this.finished = new Promise<void>((resolve) => (this.#exited = resolve));
  }

  get id(): string {
    return this.#id;
  }

  attach(hub: HubClient, followed: FollowedSubmission): void {
    this.#hub = hub;
    followed.ended.then(this.#exited, (error: Error) => {
      this.#settle.reject(error); // no effect once the task had ended
      this.#exited(); // nothing of it left to wait for here: its processes are the hub's
    });
  }

  receive({ task, update }: TaskFeedEvent): void {
    this.#id = task.id;
    this.#snapshot = task;
    if (!update) return;
    if (update.kind === 'ended') this.#settleFrom(task);
    for (const listener of [...this.#listeners]) listener(update);
  }

  snapshot(): TaskSnapshot {
    if (!this.#snapshot) throw new Error('The hub has not reported this task yet');
    return this.#snapshot;
  }

  on(_event: 'update', listener: (update: TaskUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async answer(askId: string, text: string): Promise<void> {
    if (!this.#hub) throw new Error('The hub has not reported this task yet');
    await this.#hub.answer(this.#id, askId, text);
  }

  cancel(reason?: string): void {
    void this.#hub?.cancel(this.#id, reason).catch(() => {}); // already ended, or the hub is gone (the stream says so)
  }

  #settleFrom(task: TaskSnapshot): void {
    if (task.state === 'succeeded' && task.result) return this.#settle.resolve(task.result);
    const reason = task.reason ?? (task.state === 'cancelled' ? 'cancelled' : 'crashed');
    this.#settle.reject(new TaskError(task.id, reason, task.message ?? `${task.label}: ${task.state}`, task.result, task.stderrTail));
  }
}
