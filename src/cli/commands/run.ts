/**
 * `backchannel run -- <command>`: one sub-agent, on the running hub when there is one, else (or with
 * `--local`, `--save-attachments` or a broker flag) under a broker of its own in this process. The
 * command line becomes a task spec here; what is shown while it runs is ../run/updates.ts, how it
 * ends ../run/outcome.ts.
 */
import { loadConfig } from '../../config/file.js';
import { commandSection, type Section } from '../../config/sections.js';
import type { TaskSpec } from '../../model/task.js';
import { BUDGET_FLAGS, BUDGET_FLAGS_HELP, budgetFlagOptions } from '../budget-flags.js';
import { BROKER_FLAGS, BROKER_FLAGS_HELP, brokerFlagOptions, durationFlag } from '../broker-flags.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';
import { readInput } from '../run/input.js';
import { printOutcome } from '../run/outcome.js';
import { ProgressLine } from '../run/progress-line.js';
import { showUpdates } from '../run/updates.js';
import {
  acpAgentPresets,
  createHeadlessLogger,
  defaultWorktreeDir,
  DEFAULTS,
  openClient,
  type BackchannelClient,
  type TaskRun,
} from '../../client/index.js';
import { describeChange } from '../../model/change.js';
import { fromCoreError } from '../../model/errors.js';
import { writeText } from '../terminal-text.js';

const HELP = `Usage: backchannel run [options] -- <command> [args...]

Runs one sub-agent under the broker: opens its socket, starts it, shows its progress,
and prints its final payload to stdout.

Options:
  --timeout <duration>      deadline for one attempt: 90s, 10m, 2h, or milliseconds (default: 2h; 0: none)
  --heartbeat-timeout <d>   fail as "stalled" after this long without a message (default: 30s, armed by
                            the agent's first heartbeat, so only agents that heartbeat are watched; 0: off)
  --retries <n>             retries after a failure (default: 0)
${BUDGET_FLAGS_HELP}
  --input <json|@file|->    the task's input: inline JSON, a JSON file, or stdin (64 MiB at most)
  --cwd <dir>               working directory (default: current)
  --label <text>            name shown in progress and history
  --no-task-id-arg          do not append --task-id=<id> to the command's arguments
  --ask-timeout <duration>  how long a question from the agent waits for an answer (default: 300000)
  --detach                  submit to the running hub, print the task id and return at once
  --local                   run in this process even when a hub (desktop app, \`serve\`) is running
  --worktree                run in a git worktree of its own, on a new branch (a coding agent; see
                            \`backchannel diff\`, \`apply\`, \`discard\`)
  --base <ref>              the commit the worktree starts from (default: HEAD of the repository)
  --include-uncommitted     start the worktree from the checkout as it is, uncommitted files included
  --follow-up <id>          continue in the worktree of an ended coding task (linked to it); with --acp,
                            continue an ended ACP task's session (in its worktree, if it had one)
  --acp                     the command is an ACP agent: Backchannel is its ACP client (docs/acp.md)
  --acp-agent <name>        run the owner's named ACP agent (the config's acp: agents:), no command needed
  --on-budget pause|stop    an ACP task at its cost cap: pause and ask to raise it (default), or stop
${BROKER_FLAGS_HELP}
  --json                    print exactly one JSON line (the final payload, or an error object)
  --save-attachments <dir>  write the result's attachments to <dir>/<name> (printed as name and size);
                            the task runs in this process, not on a hub
  -v, --verbose             show the agent's log lines as they come
  -h, --help                show this help

When a hub runs (the desktop app or \`backchannel serve\`), the task is submitted to it and shows in
its panel and history; otherwise it runs in this process.

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
  worktree: { type: 'boolean' },
  base: { type: 'string' },
  'include-uncommitted': { type: 'boolean' },
  'follow-up': { type: 'string' },
  acp: { type: 'boolean' },
  'acp-agent': { type: 'string' },
  'on-budget': { type: 'string' },
  'save-attachments': { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  ...BUDGET_FLAGS,
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
  /** `--local` itself was given (not implied by another flag). */
  explicitLocal: boolean;
  saveAttachments: string | undefined;
}

/** The command line as a task spec and display options, or the exit code (help, usage error). */
function parseRunOptions(argv: string[]): RunOptions | number {
  const parsed = parseCommandLine('run', argv, OPTIONS, HELP, 'command');
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  // Unset options come from the `run:` section of the one config file (backchannel config path).
  let file: Section<'run'>;
  try {
    file = commandSection(loadConfig(), 'run');
  } catch (error) {
    process.stderr.write(`backchannel run: ${(error as Error).message}\n`);
    return EXIT.failed;
  }
  let named: ReturnType<typeof namedAgent>;
  try {
    named = namedAgent(values['acp-agent'], positionals);
  } catch (error) {
    return usageError(`backchannel run: ${(error as Error).message}`, HELP);
  }
  const [command, ...args] = named?.argv ?? positionals;
  if (!command) return usageError('backchannel run: missing the command to run (put it after `--`).', HELP);
  try {
    const timeoutMs = durationFlag('timeout', values.timeout) ?? file.timeout;
    const heartbeatTimeoutMs = durationFlag('heartbeat-timeout', values['heartbeat-timeout']) ?? file.heartbeat_timeout;
    const askTimeoutMs = durationFlag('ask-timeout', values['ask-timeout']) ?? file.ask_timeout;
    const retries = values.retries === undefined ? file.retries : Number(values.retries);
    if (retries !== undefined && !(Number.isFinite(retries) && retries >= 0)) {
      throw new Error(`--retries expects a non-negative number, got "${values.retries}"`);
    }
    const input = readInput(values.input);
    const spec = {
      command,
      args,
      label: values.label ?? named?.label ?? [command, ...args].join(' '),
      ...(values.cwd ? { cwd: values.cwd } : {}),
      ...(input !== undefined ? { input } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs } : {}),
      ...(askTimeoutMs !== undefined ? { askTimeoutMs } : {}),
      ...(retries !== undefined ? { retries: Math.floor(retries) } : {}),
      ...(values['no-task-id-arg'] ? { taskIdArg: false } : {}),
      ...budgetFlagOptions(values),
      ...worktreeOption(values),
      ...acpOption(values, named?.agent),
    };
    return {
      spec,
      askTimeoutMs,
      broker: brokerFlagOptions(values),
      json: values.json === true,
      verbose: values.verbose === true,
      detach: values.detach === true,
      // A hub's result carries attachments as name and size only: saving them runs the task here (said on stderr).
      local: values.local === true || values['save-attachments'] !== undefined,
      explicitLocal: values.local === true,
      saveAttachments: values['save-attachments'],
    };
  } catch (error) {
    return usageError(`backchannel run: ${(error as Error).message}`, HELP);
  }
}

/** `--acp-agent <name>`: the owner's named ACP agent's command line (the config's `acp: agents:`), or undefined. */
function namedAgent(name: string | undefined, positionals: string[]): { argv: string[]; label: string; agent: string } | undefined {
  if (name === undefined) return undefined;
  if (positionals.length > 0) throw new Error('--acp-agent runs the command the config names; give no command after `--`');
  const presets = acpAgentPresets();
  const preset = presets.find((candidate) => candidate.name === `acp:${name}`);
  if (!preset) {
    const names =
      presets.map((candidate) => candidate.name.slice(4)).join(', ') || 'none (name them under `acp: agents:` in the config file)';
    throw new Error(`no ACP agent named "${name.slice(0, 64)}" (agents: ${names})`);
  }
  const { command, args = [] } = preset.request;
  return { argv: [command, ...args], label: preset.request.label ?? name, agent: name };
}

/** `--acp`, `--acp-agent`, `--on-budget` as the spec's `acp` (throws a usage message). */
function acpOption(values: { acp?: boolean; 'on-budget'?: string }, agent: string | undefined): Pick<TaskSpec, 'acp'> {
  const onBudget = values['on-budget'];
  if (onBudget !== undefined && onBudget !== 'pause' && onBudget !== 'stop')
    throw new Error(`--on-budget expects pause or stop, got "${onBudget}"`);
  if (!values.acp && agent === undefined) {
    if (onBudget !== undefined) throw new Error('--on-budget needs --acp or --acp-agent');
    return {};
  }
  if (agent === undefined && onBudget === undefined) return { acp: true };
  return { acp: { ...(agent !== undefined ? { agent } : {}), ...(onBudget !== undefined ? { onBudget } : {}) } };
}

/** `--worktree`, `--base`, `--include-uncommitted` as the spec's `worktree` (throws a usage message). */
function worktreeOption(values: {
  worktree?: boolean;
  base?: string;
  'include-uncommitted'?: boolean;
  'follow-up'?: string;
}): Pick<TaskSpec, 'worktree'> {
  const { worktree, base } = values;
  const includeUncommitted = values['include-uncommitted'] === true;
  if (values['follow-up'] !== undefined) {
    if (base !== undefined || includeUncommitted) throw new Error('--follow-up continues in the worktree it had; it takes no --base');
    return { worktree: { reuse: values['follow-up'] } };
  }
  if (!worktree) {
    if (base !== undefined || includeUncommitted)
      throw new Error(`${base !== undefined ? '--base' : '--include-uncommitted'} needs --worktree`);
    return {};
  }
  if (base === undefined && !includeUncommitted) return { worktree: true };
  return { worktree: { ...(base !== undefined ? { base } : {}), ...(includeUncommitted ? { includeUncommitted } : {}) } };
}

/**
 * Ctrl-C, SIGTERM or a closed terminal (SIGHUP) cancels the task cleanly; a second one stops
 * waiting. Returns the cleanup.
 */
function cancelOnSignals(task: TaskRun, line: ProgressLine | undefined): () => void {
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts += 1;
    if (interrupts === 1) {
      line?.print('Cancelling… (Ctrl-C again to stop waiting)');
      task.cancel(signal === 'SIGINT' ? 'interrupted (Ctrl-C)' : `backchannel run got ${signal}`);
    } else {
      process.exit(EXIT.cancelled);
    }
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}

/** `--detach`: submitted to the hub, not attached to this process; prints the id. */
async function detach(spec: TaskSpec, json: boolean): Promise<number> {
  const client = await openClient({ withoutHub: 'refuse' });
  try {
    const { id } = await client.start(await withFollowUp(spec, client));
    process.stdout.write(json ? JSON.stringify({ task_id: id }) + '\n' : `${id}\n`);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

export const command: CliCommand = {
  async run(argv) {
    const options = parseRunOptions(argv);
    if (typeof options === 'number') return options;
    const { askTimeoutMs, json, verbose, broker: flags, saveAttachments } = options;
    // Each refusal names the flag the user gave.
    if (options.detach && options.explicitLocal)
      return usageError('backchannel run: --detach needs the hub; it cannot be used with --local', HELP);
    if (options.detach && saveAttachments !== undefined) {
      return usageError('backchannel run: --detach returns before the result; it cannot be used with --save-attachments', HELP);
    }
    // The agent starts from this terminal's environment wherever it runs (the broker's env rules apply);
    // the owner's own terminal is the one door the run policy trusts.
    const spec: TaskSpec & { label: string } = { ...options.spec, baseEnv: callerEnvironment(), tags: { source: 'cli' }, origin: 'cli' };
    if (options.detach) return reportFailure(() => detach(spec, json), json);
    if (saveAttachments !== undefined && !options.explicitLocal) {
      process.stderr.write(
        "backchannel run: --save-attachments runs the task in this process, not on a hub (a hub's result carries attachments as name and size only)\n",
      );
    }
    // The broker flags shape a broker of our own: with them, the task runs here.
    const local = options.local || Object.values(flags).some((value) => value !== undefined);
    // The broker's logger is explicit: the library default is silent, the CLI shows errors (all with -v).
    const logger = createHeadlessLogger({ console: verbose ? 'info' : 'error' });
    // A coding task run here keeps its worktree where a hub would (`backchannel diff` finds it either way).
    // One task, then exit: no spare ACP adapter (the warm adapter, docs/acp.md) for a next one.
    const brokerOptions = { concurrency: 1, logger, worktreeDir: defaultWorktreeDir(), acp: { warm: false }, ...flags };
    return reportFailure(async () => {
      const client = await openClient({ withoutHub: 'private', local, broker: brokerOptions });
      try {
        const where = client.where;
        if (where.kind === 'hub' && !json) {
          writeText(process.stderr, `backchannel run: the task runs on the hub (${where.path}); --local runs it here\n`);
        }
        const task = await client.run(await withFollowUp(spec, client));
        const line = process.stderr.isTTY && !json ? new ProgressLine(process.stderr, spec.label) : undefined;
        const stopSignals = cancelOnSignals(task, line);
        line?.start();
        showUpdates(task, { line, verbose, json, askTimeoutMs: askTimeoutMs ?? DEFAULTS.askTimeoutMs });
        try {
          const code = await printOutcome(task, json, () => line?.stop(), saveAttachments);
          if (spec.worktree) await printChange(task, json);
          return code;
        } finally {
          stopSignals();
        }
      } finally {
        await client.close();
      }
    }, json);
  },
};

/**
 * A refusal or a lost hub as one line on stderr (with `--json` one error object on stdout, with the
 * error's code from the one table) and exit 1 — `run`'s exit codes are the task's — never a stack.
 */
async function reportFailure(run: () => Promise<number>, json: boolean): Promise<number> {
  try {
    return await run();
  } catch (error) {
    const { code, message } = fromCoreError(error);
    if (json) process.stdout.write(JSON.stringify({ status: 'error', reason: 'refused', code, message }) + '\n');
    else process.stderr.write(`backchannel run: ${message}\n`);
    return EXIT.failed;
  }
}

/** A follow-up's abbreviated task id made whole (among the coding tasks of wherever tasks run). */
async function withFollowUp<S extends TaskSpec>(spec: S, client: BackchannelClient): Promise<S> {
  const reuse = typeof spec.worktree === 'object' ? spec.worktree.reuse : undefined;
  if (reuse === undefined) return spec;
  if (spec.acp !== undefined && spec.acp !== false) {
    // An ACP task continues its parent's session, in its worktree when it had one (docs/acp.md).
    const coding = await client.changes.resolve(reuse).catch(() => undefined);
    if (coding !== undefined) return { ...spec, worktree: { reuse: coding } };
    const { worktree: _none, ...rest } = spec;
    return { ...rest, parent: await client.resolveId(reuse) } as S;
  }
  return { ...spec, worktree: { reuse: await client.changes.resolve(reuse) } };
}

/** After a coding task: what it changed, on stderr (the payload stays alone on stdout). */
async function printChange(task: TaskRun, json: boolean): Promise<void> {
  await task.finished;
  const { id, change } = task.snapshot();
  if (json || !change) return;
  const commits = change.commits.length > 0 ? `, ${change.commits.length} commit${change.commits.length === 1 ? '' : 's'}` : '';
  writeText(
    process.stderr,
    `change: ${describeChange(change)}${commits} on branch ${change.branch} — review with \`backchannel diff ${id}\`, ` +
      `then \`backchannel apply\` or \`backchannel discard\`\n`,
  );
}

/** This process's environment (the agent starts from it, in-process or on the hub). */
function callerEnvironment(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
