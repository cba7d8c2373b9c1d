import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { TaskBroker } from '../../broker/broker.js';
import { TaskError } from '../../broker/errors.js';
import { createHeadlessLogger } from '../../broker/log.js';
import type { FailureReason, TaskUpdate } from '../../model/task.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';
import { ProgressLine, describePartial } from '../progress-line.js';

const HELP = `Usage: backchannel run [options] -- <command> [args...]

Runs one sub-agent under the broker: opens its socket, starts it, shows its progress,
and prints its final payload to stdout.

Options:
  --timeout <ms>            deadline for one attempt (default: none)
  --heartbeat-timeout <ms>  fail as "stalled" after this long without a message (default: none)
  --retries <n>             retries after a failure (default: 0)
  --input <json|@file|->    the task's input: inline JSON, a JSON file, or stdin
  --cwd <dir>               working directory (default: current)
  --label <text>            name shown in progress and history
  --no-task-id-arg          do not append --task-id=<id> to the command's arguments
  --ask-timeout <ms>        how long a question from the agent waits for an answer (default: 300000)
  --json                    print exactly one JSON line (the final payload, or an error object)
  -v, --verbose             show the agent's log lines as they come
  -h, --help                show this help

Exit codes: 0 success, 1 error/crash/protocol error, 2 usage, 124 timeout or stall, 130 cancelled.
Ctrl-C cancels the task cleanly (cancel message, grace period, then the process group is killed).

Examples:
  backchannel run -- node templates/raw-node/agent.mjs
  backchannel run --timeout 60000 --input '{"path":"src"}' -- python3 templates/python/agent.py`;

const EXIT_BY_REASON: Record<FailureReason, number> = {
  error: EXIT.failed,
  crashed: EXIT.failed,
  protocol: EXIT.failed,
  timeout: EXIT.timeout,
  stalled: EXIT.timeout,
  cancelled: EXIT.cancelled,
};

function nonNegative(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} expects a non-negative number of milliseconds, got "${value}"`);
  return n;
}

function readInput(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  const text = value === '-' ? readFileSync(0, 'utf8') : value.startsWith('@') ? readFileSync(value.slice(1), 'utf8') : value;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`--input is not valid JSON (${(error as Error).message})`, { cause: error });
  }
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'run',
      argv,
      {
        timeout: { type: 'string' },
        'heartbeat-timeout': { type: 'string' },
        retries: { type: 'string' },
        input: { type: 'string' },
        cwd: { type: 'string' },
        label: { type: 'string' },
        'no-task-id-arg': { type: 'boolean' },
        'ask-timeout': { type: 'string' },
        json: { type: 'boolean' },
        verbose: { type: 'boolean', short: 'v' },
      },
      HELP,
      true,
    );
    if (typeof parsed === 'number') return parsed;
    const { values, positionals } = parsed;
    const [cmd, ...args] = positionals;
    if (!cmd) return usageError('backchannel run: missing the command to run (put it after `--`).', HELP);

    let timeoutMs, heartbeatTimeoutMs, askTimeoutMs, input, retries;
    try {
      timeoutMs = nonNegative('timeout', values.timeout);
      heartbeatTimeoutMs = nonNegative('heartbeat-timeout', values['heartbeat-timeout']);
      askTimeoutMs = nonNegative('ask-timeout', values['ask-timeout']);
      retries = nonNegative('retries', values.retries);
      input = readInput(values.input);
    } catch (error) {
      return usageError(`backchannel run: ${(error as Error).message}`, HELP);
    }

    const logger = createHeadlessLogger({ console: values.verbose ? 'info' : 'error' });
    const broker = new TaskBroker({ concurrency: 1, logger, ...(askTimeoutMs !== undefined ? { askTimeoutMs } : {}) });
    const label = values.label ?? [cmd, ...args].join(' ');
    const tty = process.stderr.isTTY && !values.json;
    const line = tty ? new ProgressLine(process.stderr, label) : undefined;

    const task = broker.submit({
      command: cmd,
      args,
      label,
      ...(values.cwd ? { cwd: values.cwd } : {}),
      ...(input !== undefined ? { input } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs } : {}),
      ...(retries !== undefined ? { retries: Math.floor(retries) } : {}),
      ...(values['no-task-id-arg'] ? { taskIdArg: false } : {}),
    });

    let interrupts = 0;
    const onSigint = () => {
      interrupts += 1;
      if (interrupts === 1) {
        line?.print('Cancelling… (Ctrl-C again to stop waiting)');
        task.cancel('interrupted (Ctrl-C)');
      } else {
        process.exit(EXIT.cancelled);
      }
    };
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigint);

    line?.start();
    task.on('update', (update: TaskUpdate) => {
      if (update.kind === 'log' && update.line && values.verbose) {
        const text = `[${update.line.stream}] ${update.line.text}`;
        if (line) line.print(text);
        else process.stderr.write(text + '\n');
      }
      if (values.verbose && !line && (update.kind === 'started' || update.kind === 'partial')) {
        // Without a TTY there is no status line: in verbose mode, progress goes to stderr as lines.
        const what =
          update.kind === 'started'
            ? `started attempt ${update.attempt}`
            : `partial${update.progress !== undefined ? ` ${update.progress}%` : ''} ${describePartial(update.payload?.data)}`;
        process.stderr.write(`[backchannel] ${what.trimEnd()}\n`);
      }
      if (update.kind === 'partial') line?.update(update.state, update.progress, describePartial(update.payload?.data));
      else if (update.kind !== 'log') line?.update(update.state, update.progress);
      if (update.kind === 'retrying') {
        const message = `attempt ${update.attempt} failed: ${task.snapshot().message ?? ''}; retrying`;
        if (line) line.print(message);
        else if (!values.json) process.stderr.write(message + '\n');
      }
      if (update.kind === 'ask') void answerQuestion(broker, task.id, line);
    });

    let code: number;
    try {
      const payload = await task.result;
      line?.stop();
      process.stdout.write(values.json ? JSON.stringify(payload) + '\n' : JSON.stringify(payload, null, 2) + '\n');
      code = EXIT.ok;
    } catch (error) {
      line?.stop();
      if (!TaskError.is(error)) throw error;
      code = EXIT_BY_REASON[error.reason];
      if (values.json) {
        const body = {
          task_id: task.id,
          status: error.payload?.status ?? 'error',
          reason: error.reason,
          message: error.message,
          payload: error.payload ?? null,
          stderr_tail: error.stderrTail ?? null,
        };
        process.stdout.write(JSON.stringify(body) + '\n');
      } else {
        process.stderr.write(`✖ ${error.message} [${error.reason}]\n`);
        if (error.payload) process.stdout.write(JSON.stringify(error.payload, null, 2) + '\n');
        if (error.stderrTail) process.stderr.write(`--- last lines of stderr ---\n${error.stderrTail}\n`);
      }
    } finally {
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigint);
    }
    await broker.close();
    return code;
  },
};

/** Prompts on the terminal for a question the agent asked; without a TTY the ask times out. */
async function answerQuestion(broker: TaskBroker, taskId: string, line: ProgressLine | undefined): Promise<void> {
  const question = broker.get(taskId)?.pendingQuestion;
  if (!question || !process.stdin.isTTY) {
    if (question) process.stderr.write(`The agent asks: ${question.question} (no terminal to answer on; it will time out)\n`);
    return;
  }
  line?.stop();
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const choices = question.choices?.length ? ` [${question.choices.join('/')}]` : '';
  const answer = await rl.question(`? ${question.question}${choices} `);
  rl.close();
  broker.answer(taskId, question.askId, answer);
  line?.start();
}
