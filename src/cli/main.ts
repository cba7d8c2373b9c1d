/**
 * `backchannel` command dispatcher. Each subcommand lives in ./commands/<name>.ts and exports
 * `command: CliCommand`; they are loaded lazily so `backchannel send` starts fast inside an agent.
 */
import { outputWasClosed, setJsonErrors, wantsJson, type CliCommand } from './command.js';
import { readOwnVersion } from '../version.js';

const SUMMARIES: Record<string, string> = {
  run: 'run one sub-agent, show its progress, print its result',
  send: 'send a payload by hand from inside a sub-agent (debugging aid)',
  serve: 'serve the task panel and its API on 127.0.0.1 (headless)',
  new: 'scaffold a new sub-agent from a template',
  gateway: 'serve the OpenAI and Anthropic model APIs, each request run as a sub-agent',
  worker: 'run sub-agents from a Redis queue (a worker of a fleet)',
  stats: 'how fast, reliable and costly each sub-agent and model has been',
  check: 'run a sub-agent under conformance scenarios and print a report card',
  mcp: 'a Model Context Protocol server (stdio) for coding agents',
  tasks: "list the hub's tasks (or the history on disk)",
  show: 'show one task',
  logs: "print (-f: follow) a task's log",
  wait: 'wait for a task to end; exit codes as `run`',
  cancel: 'cancel a task',
  retry: 'run an ended task again',
  answer: "answer a sub-agent's question",
  diff: "show a coding task's change (several: together, overlaps flagged)",
  apply: "bring coding tasks' changes into the checkout (all or none)",
  discard: "remove a coding task's worktree and branch (--keep-branch keeps the branch)",
  worktrees: 'list the worktrees Backchannel made for coding tasks',
  schedule: 'schedules on the hub: add, ls, show, pause, resume, rm, run-now',
  completion: 'print a shell completion script (bash, zsh or fish)',
  config: 'where the config file is (config path) and what it holds (config show)',
};

/** The command names, for `backchannel completion`. */
export function commandNames(): string[] {
  return Object.keys(SUMMARIES);
}

export function usage(): string {
  const width = Math.max(...Object.keys(SUMMARIES).map((name) => name.length));
  const lines = Object.entries(SUMMARIES).map(([name, text]) => `  ${name.padEnd(width)}  ${text}`);
  return [
    'Usage: backchannel <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    "Run `backchannel <command> --help` for a command's options.",
  ].join('\n');
}

/**
 * A reader that went away (`backchannel tasks | head`, `serve | tee log` and Ctrl-C) ends the command
 * normally, as in any Unix tool, instead of an unhandled EPIPE with a stack: at once (exit 0), or, for
 * a server, through its own shutdown (command.ts `whenOutputCloses`). What is written to the closed
 * stream afterwards (the shutdown's own lines) is dropped. Another error on an open stream exits 1.
 */
function quietOnClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    let closed = false;
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (closed) return;
      if (error.code !== 'EPIPE') process.exit(1);
      closed = true;
      outputWasClosed();
    });
  }
}

export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipes();
  setJsonErrors(wantsJson(argv));
  // `backchannel help run` is `backchannel run --help`.
  if (argv[0] === 'help' && argv[1] !== undefined) return main([argv[1], '--help']);
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(readOwnVersion() + '\n');
    return 0;
  }
  if (!Object.hasOwn(SUMMARIES, name)) {
    process.stderr.write(`backchannel: unknown command "${name}"\nRun \`backchannel --help\` for the commands.\n`);
    return 2;
  }
  // The name is checked against SUMMARIES above, so this import path is never user-controlled.
  const { command } = (await import(`./commands/${name}.js`)) as { command: CliCommand };
  return command.run(rest);
}
