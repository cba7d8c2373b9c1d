/**
 * `backchannel run` against the running hub: the task is submitted over the control endpoint, so it
 * shows in the hub's panel and history. Same exit codes, `--json`, TTY progress and Ctrl-C cancel as
 * the in-process run; `--detach` prints the id and returns at once.
 */
import { writeText } from '../terminal-text.js';
import type { HubClient } from '../../client/discover.js';
import { requestForHub } from '../../client/submit-request.js';
import type { TaskSpec } from '../../model/task.js';
import { EXIT } from '../command.js';
import { ProgressLine } from './progress-line.js';
import { followTask, LogPrinter, printSnapshotOutcome, promptAnswer, showSnapshot } from './remote.js';

export interface HubRunOptions {
  spec: TaskSpec & { label: string };
  json: boolean;
  verbose: boolean;
  detach: boolean;
}

export async function runOnHub(hub: HubClient, options: HubRunOptions): Promise<number> {
  const { id } = await hub.submit(requestForHub({ ...options.spec, tags: { source: 'cli' } }));
  if (options.detach) {
    process.stdout.write(options.json ? JSON.stringify({ task_id: id }) + '\n' : `${id}\n`);
    return EXIT.ok;
  }
  const line = process.stderr.isTTY && !options.json ? new ProgressLine(process.stderr, options.spec.label) : undefined;
  const print = (text: string): void => (line ? line.print(text) : writeText(process.stderr, text + '\n'));
  const logs = options.verbose ? new LogPrinter(hub, id, print) : undefined;
  const stopSignals = cancelOnSignals(hub, id, line);
  let asked: string | undefined;
  line?.start();
  try {
    const task = await followTask(hub, id, (snapshot) => {
      showSnapshot(line, snapshot);
      void logs?.pull().catch(() => {});
      if (snapshot.pendingQuestion && snapshot.pendingQuestion.askId !== asked) {
        asked = snapshot.pendingQuestion.askId;
        void promptAnswer(hub, snapshot, line);
      }
    });
    line?.stop();
    await logs?.pull().catch(() => {});
    return printSnapshotOutcome(task, options.json);
  } catch (error) {
    line?.stop();
    process.stderr.write(`backchannel run: ${(error as Error).message} (task ${id})\n`);
    return EXIT.failed;
  } finally {
    stopSignals();
    hub.close();
  }
}

/** Ctrl-C (or SIGTERM) asks the hub to cancel the task; a second one stops waiting. */
function cancelOnSignals(hub: HubClient, id: string, line: ProgressLine | undefined): () => void {
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts += 1;
    if (interrupts > 1) process.exit(EXIT.cancelled);
    line?.print('Cancelling… (Ctrl-C again to stop waiting)');
    hub.cancel(id).catch((error: unknown) => process.stderr.write(`backchannel run: ${(error as Error).message}\n`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
