/**
 * `backchannel run -- <command>`: one sub-agent under a broker of its own. The command line becomes a
 * task spec here; what is shown while it runs is ../run/updates.ts, how it ends ../run/outcome.ts.
 */
import { TaskBroker, type TaskHandle } from '../../broker/broker.js';
import { createHeadlessLogger } from '../../broker/log.js';
import { DEFAULTS } from '../../broker/settings.js';
import { loadConfig, setting } from '../../config/file.js';
import type { TaskSpec } from '../../model/task.js';
import { BROKER_FLAGS, BROKER_FLAGS_HELP, brokerFlagOptions, durationFlag } from '../broker-flags.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';
import { readInput } from '../run/input.js';
import { printOutcome } from '../run/outcome.js';
import { ProgressLine } from '../run/progress-line.js';
import { showUpdates } from '../run/updates.js';
import { findHub } from '../../client/discover.js';
import { runOnHub } from '../run/hub-run.js';
import { NO_HUB } from '../run/remote.js';

const HELP = `Usage: backchannel run [options] -- <command> [args...]

Runs one sub-agent under the broker: opens its socket, starts it, shows its progress,
and prints its final payload to stdout.

Options:
  --timeout <ms>            deadline for one attempt (default: none)
  --heartbeat-timeout <ms>  fail as "stalled" after this long without a message (default: none)
  --retries <n>             retries after a failure (default: 0)
  --input <json|@file|->    the task's input: inline JSON, a JSON file, or stdin (64 MiB at most)
  --cwd <dir>               working directory (default: current)
  --label <text>            name shown in progress and history
  --no-task-id-arg          do not append --task-id=<id> to the command's arguments
  --ask-timeout <ms>        how long a question from the agent waits for an answer (default: 300000)
  --detach                  submit to the running hub, print the task id and return at once
  --local                   run in this process even when a hub (desktop app, \`serve\`) is running
${BROKER_FLAGS_HELP}
  --json                    print exactly one JSON line (the final payload, or an error object)
  --save-attachments <dir>  write the result's attachments to <dir>/<name> (printed as name and size; runs locally)
  -v, --verbose             show the agent's log lines as they come
  -h, --help                show this help

When a hub runs (the desktop app or \`backchannel serve\`), the task is submitted to it and shows in
its panel and history; otherwise it runs in this process. --no-task-id-arg always runs locally.

Exit codes: 0 success, 1 error/crash/protocol error, 2 usage, 124 timeout or stall, 130 cancelled.
Ctrl-C cancels the task cleanly (cancel message, grace period, then the process group is killed).

Examples:
  backchannel run -- node templates/raw-node/agent.mjs
  backchannel run --timeout 60000 --input '{"path":"src"}' -- python3 templates/python/agent.py`;

const OPTIONS = {
  timeout: { type: 'string' },
  'heartbeat-timeout': { type: 'string' },
  retries: { type: 'string' },
  input: { type: 'string' },
  cwd: { type: 'string' },
  label: { type: 'string' },
  'no-task-id-arg': { type: 'boolean' },
  'ask-timeout': { type: 'string' },
  json: { type: 'boolean' },
  detach: { type: 'boolean' },
  local: { type: 'boolean' },
  'save-attachments': { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  ...BROKER_FLAGS,
} as const;

interface RunOptions {
  spec: TaskSpec & { label: string };
  askTimeoutMs: number | undefined;
  broker: ReturnType<typeof brokerFlagOptions>;
  json: boolean;
  verbose: boolean;
  detach: boolean;
  local: boolean;
  saveAttachments: string | undefined;
}

/** The command line as a task spec and display options, or the exit code (help, usage error). */
function parseRunOptions(argv: string[]): RunOptions | number {
  const parsed = parseCommandLine('run', argv, OPTIONS, HELP, 'command');
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  // Unset options come from the `run:` section of the one config file (backchannel config path).
  try {
    const config = loadConfig();
    for (const [option, key] of [
      ['timeout', 'timeout'],
      ['heartbeat-timeout', 'heartbeat_timeout'],
      ['retries', 'retries'],
      ['ask-timeout', 'ask_timeout'],
    ] as const) {
      const value = setting(config, 'run', key, key === 'retries' ? 'integer' : 'number');
      if (values[option] === undefined && value !== undefined) values[option] = String(value);
    }
  } catch (error) {
    process.stderr.write(`backchannel run: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
  const [command, ...args] = positionals;
  if (!command) return usageError('backchannel run: missing the command to run (put it after `--`).', HELP);
  try {
    const timeoutMs = durationFlag('timeout', values.timeout);
    const heartbeatTimeoutMs = durationFlag('heartbeat-timeout', values['heartbeat-timeout']);
    const askTimeoutMs = durationFlag('ask-timeout', values['ask-timeout']);
    const retries = values.retries === undefined ? undefined : Number(values.retries);
    if (retries !== undefined && !(Number.isFinite(retries) && retries >= 0)) {
      throw new Error(`--retries expects a non-negative number, got "${values.retries}"`);
    }
    const input = readInput(values.input);
    const spec = {
      command,
      args,
      label: values.label ?? [command, ...args].join(' '),
      ...(values.cwd ? { cwd: values.cwd } : {}),
      ...(input !== undefined ? { input } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs } : {}),
      ...(retries !== undefined ? { retries: Math.floor(retries) } : {}),
      ...(values['no-task-id-arg'] ? { taskIdArg: false } : {}),
    };
    return {
      spec,
      askTimeoutMs,
      broker: brokerFlagOptions(values),
      json: values.json === true,
      verbose: values.verbose === true,
      detach: values.detach === true,
      local: values.local === true || values['no-task-id-arg'] === true || values['save-attachments'] !== undefined,
      saveAttachments: values['save-attachments'],
    };
  } catch (error) {
    return usageError(`backchannel run: ${(error as Error).message}`, HELP);
  }
}

/** Ctrl-C (or SIGTERM) cancels the task cleanly; a second one stops waiting. Returns the cleanup. */
function cancelOnSignals(task: TaskHandle, line: ProgressLine | undefined): () => void {
  let interrupts = 0;
  const onSignal = () => {
    interrupts += 1;
    if (interrupts === 1) {
      line?.print('Cancelling… (Ctrl-C again to stop waiting)');
      task.cancel('interrupted (Ctrl-C)');
    } else {
      process.exit(EXIT.cancelled);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

export const command: CliCommand = {
  async run(argv) {
    const options = parseRunOptions(argv);
    if (typeof options === 'number') return options;
    const { spec, askTimeoutMs, json, verbose, broker: flags, saveAttachments } = options;
    if (options.detach && options.local) return usageError('backchannel run: --detach needs the hub; it cannot be used with --local', HELP);
    // The broker flags shape a broker of our own: with them, the task runs here.
    const ownBroker = options.local || Object.values(flags).some((value) => value !== undefined);
    const hub = ownBroker ? undefined : await findHub();
    if (hub) return runOnHub(hub, options);
    if (options.detach) {
      process.stderr.write(`backchannel run --detach: ${NO_HUB}\n`);
      return EXIT.failed;
    }

    // The broker's logger is explicit: the library default is silent, the CLI shows errors (all with -v).
    const logger = createHeadlessLogger({ console: verbose ? 'info' : 'error' });
    const broker = new TaskBroker({ concurrency: 1, logger, ...flags, ...(askTimeoutMs !== undefined ? { askTimeoutMs } : {}) });
    const line = process.stderr.isTTY && !json ? new ProgressLine(process.stderr, spec.label) : undefined;
    const task = broker.submit(spec);
    const stopSignals = cancelOnSignals(task, line);
    line?.start();
    showUpdates(broker, task, { line, verbose, json, askTimeoutMs: askTimeoutMs ?? DEFAULTS.askTimeoutMs });

    let code: number;
    try {
      code = await printOutcome(task, json, () => line?.stop(), saveAttachments);
    } finally {
      stopSignals();
    }
    await broker.close();
    return code;
  },
};
