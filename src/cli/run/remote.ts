/**
 * The task commands' side of the hub: open it (or the history on disk), resolve an abbreviated id,
 * and the seam's handle of one task (its own stream on the hub), which `wait` prints as `run` does.
 */
import type { BackchannelBridge } from '../../bridge/contract.js';
import { findHub, openHistory, type HubClient } from '../../client/discover.js';
import { FedTask } from '../../client/fed-task.js';
import { HubTasks } from '../../client/hub-tasks.js';
import type { TaskRun } from '../../client/tasks.js';
import type { LogLine } from '../../model/task.js';

export const NO_HUB = 'no Backchannel hub is running (start the desktop app or `backchannel serve`); this command needs one';

/** A bridge for a task command: the hub's, or (with `history`) the history on disk; `close` releases it. */
export interface CommandBridge {
  bridge: BackchannelBridge;
  hub: HubClient | undefined;
  close(): Promise<void>;
}

export async function openCommandBridge(options: { history: boolean }): Promise<CommandBridge | undefined> {
  const hub = await findHub();
  if (hub) return { bridge: hub, hub, close: async () => hub.close() };
  if (!options.history) return undefined;
  const history = await openHistory();
  return { bridge: history, hub: undefined, close: () => history.close() };
}

/**
 * The seam's handle of task `id` for a task command: followed on its own stream on the hub, or — from
 * the history on disk, without a hub — its last picture, settled when it had finished (a big result
 * is fetched whole from the bridge either way).
 */
export async function taskRunOf(open: CommandBridge, id: string): Promise<TaskRun> {
  if (open.hub) return new HubTasks(open.hub, async () => undefined).follow(id);
  const { task } = await open.bridge.getTask(id);
  const noHub = async (): Promise<never> => {
    throw new Error(NO_HUB);
  };
  const run = new FedTask({ cancel: noHub, answer: noHub, result: (taskId) => open.bridge.taskResult(taskId) }, id);
  run.receive({ task });
  run.end();
  return run;
}

/** Prints a task's log lines past the ones already printed; call it again on every change. */
export class LogPrinter {
  private printed = 0;
  private last: LogLine | undefined;

  constructor(
    private readonly bridge: BackchannelBridge,
    private readonly id: string,
    private readonly write: (text: string) => void,
  ) {}

  async pull(): Promise<void> {
    const { log } = await this.bridge.getTask(this.id);
    // The hub keeps the last lines only: when older ones were dropped, start after the last one printed.
    let from = this.printed;
    if (this.last && log[from - 1] !== undefined && !sameLine(log[from - 1]!, this.last)) {
      const at = log.findLastIndex((line) => sameLine(line, this.last!));
      from = at + 1;
    }
    for (const line of log.slice(from)) this.write(`[${line.stream}] ${line.text}`);
    this.printed = log.length;
    this.last = log.at(-1) ?? this.last;
  }
}

function sameLine(a: LogLine, b: LogLine): boolean {
  return a.time === b.time && a.text === b.text && a.stream === b.stream;
}
