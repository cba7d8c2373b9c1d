/**
 * The task commands' side of the hub: open it (or the history on disk), resolve an abbreviated id,
 * follow one task's snapshots until it ends, and print how it ended with `run`'s exit codes.
 */
import { writeText } from '../terminal-text.js';
import type { BackchannelBridge, BridgeEvent } from '../../bridge/contract.js';
import { findHub, HubLostError, openHistory, type HubClient } from '../../client/discover.js';
import { isFinished, type LogLine, type TaskSnapshot } from '../../model/task.js';
import { EXIT } from '../command.js';
import { EXIT_BY_REASON, printFailureFields } from './outcome.js';
import { describePartial } from '../../model/states.js';
import type { ProgressLine } from './progress-line.js';
import { askOnTerminal } from './updates.js';

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
 * Calls `onSnapshot` with each new picture of task `id` and resolves with its last one once it has
 * ended. Rejects with `HubLostError` when the hub goes away first.
 */
export function followTask(
  bridge: BackchannelBridge & Partial<Pick<HubClient, 'onLost'>>,
  id: string,
  onSnapshot?: (task: TaskSnapshot) => void,
): Promise<TaskSnapshot> {
  return new Promise((resolve, reject) => {
    const subscription: { stop?: () => void } = {};
    let ended = false;
    const stopLost = bridge.onLost?.((error: HubLostError) => finish(() => reject(error)));
    const finish = (settle: () => void): void => {
      if (ended) return;
      ended = true;
      stopLost?.();
      subscription.stop?.();
      settle();
    };
    subscription.stop = bridge.subscribe((event: BridgeEvent) => {
      const task = event.tasks.find((t) => t.id === id);
      if (!task) return;
      onSnapshot?.(task);
      if (isFinished(task.state)) finish(() => resolve(task));
    });
    if (ended) subscription.stop();
  });
}

/** Prints how a finished task ended (as `run` does) and returns the exit code. */
export function printSnapshotOutcome(task: TaskSnapshot, json: boolean): number {
  if (task.state === 'succeeded') {
    const payload = task.result ?? null;
    writeText(process.stdout, json ? JSON.stringify(payload) + '\n' : JSON.stringify(payload, null, 2) + '\n');
    return EXIT.ok;
  }
  const reason = task.reason ?? (task.state === 'cancelled' ? 'cancelled' : 'crashed');
  const message = task.message ?? `task ${task.state}`;
  printFailureFields({ taskId: task.id, reason, message, payload: task.result, stderrTail: task.stderrTail }, json);
  return EXIT_BY_REASON[reason];
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

/** The status line's picture of a snapshot. */
export function showSnapshot(line: ProgressLine | undefined, task: TaskSnapshot): void {
  line?.update(task.state, task.progress, describePartial(task.lastPartial));
}

/** Asks a sub-agent's pending question on the terminal and sends the answer to the hub. */
export async function promptAnswer(bridge: BackchannelBridge, task: TaskSnapshot, line: ProgressLine | undefined): Promise<void> {
  const question = task.pendingQuestion;
  if (!question) return;
  const answer = await askOnTerminal(question, line, `answer with \`backchannel answer ${task.id} <text>\``);
  if (answer === undefined) return;
  await bridge.answer(task.id, question.askId, answer).catch((error: unknown) => process.stderr.write(`${(error as Error).message}\n`));
}
