import { locateTask, printToStdout, sendOnce } from '../../agent-runtime/index.js';
import { isPayloadStatus, isoNow, type Payload } from '../../protocol/index.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';

const HELP = `Usage: backchannel send [options]

Sends one payload to the current task by hand, from inside a sub-agent (or its shell).
Reads CURSOR_TASK_ID, CURSOR_IPC_PATH and CURSOR_IPC_TOKEN from the environment; without
a socket it prints the payload as a "data:" line on stdout (the fallback channel).

Options:
  --status <s>        partial | heartbeat | success | error | cancelled (default: partial)
  --progress <0-100>  sets data.progress
  --message <text>    sets data.message
  --data <json>       the payload's data (merged with --progress/--message when an object)
  --task-id <id>      override CURSOR_TASK_ID
  --not-retryable     with --status error: ask the broker not to retry
  -h, --help          show this help

Examples:
  backchannel send --progress 40 --message "indexing"
  backchannel send --status success --data '{"files":12}'`;

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'send',
      argv,
      {
        status: { type: 'string', default: 'partial' },
        progress: { type: 'string' },
        message: { type: 'string' },
        data: { type: 'string' },
        'task-id': { type: 'string' },
        'not-retryable': { type: 'boolean' },
      },
      HELP,
    );
    if (typeof parsed === 'number') return parsed;
    const { values } = parsed;
    if (!isPayloadStatus(values.status)) return usageError(`backchannel send: unknown --status "${values.status}"`, HELP);

    let data: unknown;
    try {
      data = values.data !== undefined ? JSON.parse(values.data) : undefined;
    } catch (error) {
      return usageError(`backchannel send: --data is not valid JSON (${(error as Error).message})`, HELP);
    }
    if (values.progress !== undefined || values.message !== undefined) {
      const base =
        data && typeof data === 'object' && !Array.isArray(data)
          ? (data as Record<string, unknown>)
          : data === undefined
            ? {}
            : { value: data };
      if (values.progress !== undefined) {
        const progress = Number(values.progress);
        if (!Number.isFinite(progress) || progress < 0 || progress > 100)
          return usageError('backchannel send: --progress expects 0–100', HELP);
        base.progress = progress;
      }
      if (values.message !== undefined) base.message = values.message;
      data = base;
    }

    let location;
    try {
      location = locateTask(values['task-id'] ? [`--task-id=${values['task-id']}`] : [], process.env);
    } catch (error) {
      process.stderr.write(`backchannel send: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    const payload: Payload = { task_id: location.taskId, status: values.status, meta: { timestamp: isoNow() } };
    if (data !== undefined) payload.data = data;
    if (values['not-retryable']) payload.retryable = false;

    if (!location.ipcPath || !location.token) {
      await printToStdout(payload);
      return EXIT.ok;
    }
    try {
      const outcome = await sendOnce(location.ipcPath, payload, location.token);
      if (outcome.delivered) return EXIT.ok;
      process.stderr.write(`backchannel send: ${outcome.reason}\n`);
      return EXIT.failed;
    } catch (error) {
      process.stderr.write(
        `backchannel send: cannot reach ${location.ipcPath} (${(error as Error).message}); printing to stdout instead\n`,
      );
      await printToStdout(payload);
      return EXIT.ok;
    }
  },
};
