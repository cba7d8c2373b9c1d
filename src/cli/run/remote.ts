/**
 * The task commands' side of the hub: open it (or the history on disk), resolve an abbreviated id,
 * follow one task on its own stream until it ends, and print how it ended with `run`'s exit codes.
 */
import { writeText } from '../terminal-text.js';
import type { BackchannelBridge } from '../../bridge/contract.js';
import { findHub, HubLostError, openHistory, type HubClient } from '../../client/discover.js';
import { isFinished, type LogLine, type TaskSnapshot } from '../../model/task.js';
import { EXIT } from '../command.js';
import { EXIT_BY_REASON, printFailureFields } from './outcome.js';
import { failureOf } from '../../model/states.js';

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
 * Calls `onSnapshot` with each picture of task `id`, from its own stream on the hub (in order, not
 * coalesced), and resolves with its last one once it has ended. Rejects with `HubLostError` when the
 * hub goes away first.
 */
export async function followTask(hub: HubClient, id: string, onSnapshot?: (task: TaskSnapshot) => void): Promise<TaskSnapshot> {
  let last: TaskSnapshot | undefined;
  const stream = hub.watch(id, ({ task }) => {
    last = task;
    onSnapshot?.(task);
  });
  await stream.ended;
  if (!last || !isFinished(last.state)) throw new HubLostError(hub.path, "the task's stream ended before the task did");
  return last;
}

/**
 * Prints how a finished task ended (as `run` does) and returns the exit code. A big result, of which
 * the snapshot holds only a summary, is fetched whole from `bridge`.
 */
export async function printSnapshotOutcome(task: TaskSnapshot, json: boolean, bridge?: BackchannelBridge): Promise<number> {
  const failure = failureOf(task);
  if (!failure) {
    const payload = task.result ?? (task.resultSummary && bridge ? await bridge.taskResult(task.id) : null);
    writeText(process.stdout, json ? JSON.stringify(payload) + '\n' : JSON.stringify(payload, null, 2) + '\n');
    return EXIT.ok;
  }
  printFailureFields({ taskId: task.id, ...failure, payload: task.result, stderrTail: task.stderrTail }, json);
  return EXIT_BY_REASON[failure.reason];
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
