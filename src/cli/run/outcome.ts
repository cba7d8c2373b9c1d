/**
 * How `backchannel run` ends: the final payload on stdout (pretty, or one JSON line with `--json`),
 * or the failure (a message on stderr, the error payload on stdout; with `--json` one error object),
 * and the exit code documented in the README.
 */
import { TaskError, type TaskHandle } from '../../client/index.js';
import type { FailureReason, PartialResult } from '../../model/task.js';
import { EXIT } from '../command.js';
import { writeText } from '../terminal-text.js';
import { saveAttachments } from './attachments.js';

export const EXIT_BY_REASON: Record<FailureReason, number> = {
  error: EXIT.failed,
  crashed: EXIT.failed,
  protocol: EXIT.failed,
  timeout: EXIT.timeout,
  stalled: EXIT.timeout,
  cancelled: EXIT.cancelled,
  refused: EXIT.failed,
  budget_exceeded: EXIT.failed,
};

/**
 * Waits for `task` to settle, calls `onSettled` (e.g. to clear the status line), prints the outcome
 * and returns the exit code. Errors other than a TaskError are rethrown. Attachments are printed as
 * name, size and encoding; with `saveDir` they are written there first.
 */
export async function printOutcome(task: TaskHandle, json: boolean, onSettled?: () => void, saveDir?: string): Promise<number> {
  let payload: Awaited<TaskHandle['result']>;
  try {
    payload = await task.result;
  } catch (error) {
    onSettled?.();
    if (!TaskError.is(error)) throw error;
    printFailure(task.id, error, json, saveDir);
    return EXIT_BY_REASON[error.reason];
  }
  onSettled?.();
  let printed: typeof payload;
  try {
    printed = saveAttachments(payload, saveDir);
  } catch (error) {
    process.stderr.write(`✖ ${(error as Error).message}\n`);
    return EXIT.failed;
  }
  writeText(process.stdout, json ? JSON.stringify(printed) + '\n' : JSON.stringify(printed, null, 2) + '\n');
  return EXIT.ok;
}

function printFailure(taskId: string, error: TaskError, json: boolean, saveDir: string | undefined): void {
  const payload = error.payload && saveAttachments(error.payload, saveDir);
  const { reason, message, stderrTail, partialResult } = error;
  printFailureFields({ taskId, reason, message, payload, stderrTail, partialResult }, json);
}

/** What a failed task says (from its TaskError, wherever it ran). */
interface FailureFields {
  taskId: string;
  reason: FailureReason;
  message: string;
  payload?: { status?: string } | undefined;
  stderrTail?: string | undefined;
  /** What a stopped task had produced (model/task.ts PartialResult): printed as its result. */
  partialResult?: PartialResult | undefined;
}

/** A failure on stderr (the error payload on stdout), or with `--json` one error object on stdout. */
function printFailureFields(failure: FailureFields, json: boolean): void {
  const { taskId, reason, message, payload, stderrTail, partialResult } = failure;
  if (json) {
    const body = {
      task_id: taskId,
      status: payload?.status ?? 'error',
      reason,
      message,
      payload: payload ?? null,
      stderr_tail: stderrTail ?? null,
      ...(partialResult ? { partial_result: partialResult } : {}),
    };
    writeText(process.stdout, JSON.stringify(body) + '\n');
    return;
  }
  writeText(
    process.stderr,
    `✖ ${message} [${reason}]${partialResult ? '; what the agent had produced is kept (partial result below)' : ''}\n`,
  );
  if (partialResult) writeText(process.stdout, JSON.stringify({ partial_result: partialResult }, null, 2) + '\n');
  else if (payload) writeText(process.stdout, JSON.stringify(payload, null, 2) + '\n');
  if (stderrTail) writeText(process.stderr, `--- last lines of stderr ---\n${stderrTail}\n`);
  if (refusedTaskIdArg(reason, stderrTail)) writeText(process.stderr, `${TASK_ID_ARG_HINT}\n`);
}

/** Said when the agent refused the `--task-id=<id>` argument the broker appends (`node -e "…"` does). */
export const TASK_ID_ARG_HINT =
  'hint: the command refused the --task-id=<id> argument Backchannel appends; run it with `--no-task-id-arg` (the agent can read CURSOR_TASK_ID instead)';

/** Whether a crash reads like the command's own refusal of the appended `--task-id=` argument (`node: bad option: --task-id=…`). */
export function refusedTaskIdArg(reason: FailureReason, stderrTail: string | undefined): boolean {
  if (reason !== 'crashed' || !stderrTail) return false;
  return stderrTail
    .split('\n')
    .some(
      (line) =>
        line.includes('--task-id=') &&
        /\b(bad|unknown|unrecognized|invalid|illegal|unexpected) (option|argument|flag)|no such option/i.test(line),
    );
}
