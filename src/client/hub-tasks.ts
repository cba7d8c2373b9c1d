/**
 * The client's hub backend (./tasks.ts): each task is submitted over the control endpoint and
 * followed on its own stream (`HubClient.submitAndFollow`, or `watch` for an existing task), so it shows in
 * the hub's panel and history while this process shows or relays it. The handles are `FedTask`s,
 * the same as a local follow's, so a front-end cannot tell where its task runs.
 *
 * When the hub goes away, a running task's handle fails with `HubLostError` (its stream broke) and
 * the next submission looks for a hub again: a restarted hub is picked up, none is a clear error.
 */
import { HubLostError, type FollowedSubmission, type HubClient } from './hub-client.js';
import type { BackchannelBridge } from '../bridge/contract.js';
import { bridgeClient, type BridgeArgs, type BridgeMethod, type BridgeResult } from '../bridge/calls.js';
import { isActive } from '../model/states.js';
import { TASK_STATES, type TaskSpec } from '../model/task.js';
import { FedTask, type TaskControls } from './fed-task.js';
import { requestForHub } from './submit-request.js';
import type { TaskBackend, TaskLoad, TaskRun } from './tasks.js';
import { bridgeChanges, type ChangeService } from './changes.js';

export class HubTasks implements TaskBackend {
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

  /** The hub's broker keeps its worktrees in its data directory. */
  readonly keepsWorktrees = true;

  readonly changes: ChangeService = bridgeChanges(() => this.#connected());

  /** The hub's calls, on whichever hub answers now (found again after one was lost). */
  readonly bridge: BackchannelBridge = bridgeClient(
    async <M extends BridgeMethod>(method: M, ...args: BridgeArgs<M>): Promise<BridgeResult<M>> => {
      const hub = await this.#connected();
      try {
        return await (hub[method] as (...a: BridgeArgs<M>) => Promise<BridgeResult<M>>)(...args);
      } catch (error) {
        this.#forgetIfLost(hub, error);
        throw error;
      }
    },
    (listener) => this.#hub?.subscribe(listener) ?? (() => {}),
  );

  async run(spec: TaskSpec): Promise<TaskRun> {
    return this.#open((hub, task) => hub.submitAndFollow(requestForHub(spec), (event) => task.receive(event)));
  }

  start(spec: TaskSpec): Promise<{ id: string }> {
    return this.bridge.submit(requestForHub(spec));
  }

  async follow(id: string): Promise<TaskRun> {
    return this.#open((hub, task) => hub.watch(id, (event) => task.receive(event)), id);
  }

  async counts(): Promise<TaskLoad> {
    const hub = await this.#connected();
    try {
      // Counted by the hub (a page's `total`), not by fetching every task of a long history.
      const [running, queued] = await Promise.all([
        hub.listTaskPage({ state: TASK_STATES.filter(isActive), limit: 1 }),
        hub.listTaskPage({ state: 'queued', limit: 1 }),
      ]);
      return { running: running.total, queued: queued.total };
    } catch (error) {
      this.#forgetIfLost(hub, error);
      throw error;
    }
  }

  async close(): Promise<void> {
    this.#hub?.close();
    this.#hub = undefined;
  }

  async #open(start: (hub: HubClient, task: FedTask) => FollowedSubmission, id?: string): Promise<TaskRun> {
    const hub = await this.#connected();
    const controls: TaskControls = {
      cancel: (taskId, reason) => hub.cancel(taskId, reason),
      answer: (taskId, askId, text, via) => hub.answer(taskId, askId, text, via),
      answerToolCall: (taskId, callId, answer) => hub.answerToolCall(taskId, callId, answer),
      annotate: (taskId, meta) => hub.annotate(taskId, meta),
      result: (taskId) => hub.taskResult(taskId),
    };
    const task = new FedTask(controls, id);
    const stream = start(hub, task);
    task.feedBy(() => stream.close());
    stream.ended.then(
      () => task.end(),
      (error: Error) => {
        task.end(error);
        this.#forgetIfLost(hub, error);
      },
    );
    try {
      await stream.id;
    } catch (error) {
      this.#forgetIfLost(hub, error);
      throw error;
    }
    return task;
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
