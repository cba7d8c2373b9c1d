import { parseArgs, type ParseArgsConfig } from 'node:util';
import { exitCodeOf, fromCoreError } from '../model/errors.js';

/** One `backchannel` subcommand. `run` returns the process exit code. */
export interface CliCommand {
  run(argv: string[]): Promise<number>;
}

/** Exit codes shared by every command (documented in the README). */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  timeout: 124,
  cancelled: 130,
} as const;

/** Set by main() when the command line asks for JSON output: errors are then one JSON object on stdout. */
let jsonErrors = false;

export function setJsonErrors(on: boolean): void {
  jsonErrors = on;
}

/** Whether `argv` asks for `--json` (before any `--`: what follows is the agent's command line). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/** A task command's ids: a usage error (exit 2) when fewer than `min` or more than `max`, else undefined. */
export function checkTaskIds(name: string, ids: readonly string[], [min, max]: [number, number], help: string): number | undefined {
  if (ids.length < min) return usageError(`backchannel ${name}: missing the task id`, help);
  if (ids.length > max) return usageError(`backchannel ${name}: unexpected argument "${ids[max]}"`, help);
  return undefined;
}

/**
 * Prints a usage error — the message and one line pointing at `--help` (the command is read from the
 * help text's `Usage: backchannel <command>` line) — and returns the usage exit code. With `--json`
 * the error is one JSON object on stdout instead.
 */
export function usageError(message: string, help: string): number {
  const command = /^Usage: (backchannel(?: [a-z][\w-]*)?)/.exec(help)?.[1] ?? 'backchannel';
  if (jsonErrors) {
    process.stdout.write(JSON.stringify({ status: 'error', reason: 'usage', message, help: `${command} --help` }) + '\n');
  } else {
    process.stderr.write(`${message}\nRun \`${command} --help\` for usage.\n`);
  }
  return EXIT.usage;
}

/**
 * A command that failed: one line on stderr (`backchannel <name>: <message>`), or with `--json` one
 * object on stdout with the error's code; the exit code is the one the error table gives that code
 * (src/model/errors.ts: a bad argument 2, anything else 1).
 */
export function commandFailed(name: string, error: unknown): number {
  const failure = fromCoreError(error);
  if (jsonErrors) process.stdout.write(JSON.stringify({ status: 'error', code: failure.code, message: failure.message }) + '\n');
  else process.stderr.write(`backchannel ${name}: ${failure.message}\n`);
  return exitCodeOf(failure);
}

/**
 * parseArgs' own messages, said plainly. (Its unknown-option message suggests `-- "--x"` and never
 * closes that quote.)
 */
function describeParseError(error: Error & { code?: string }, argv: readonly string[], takesCommand: boolean): string {
  const option = /'([^']+)'/.exec(error.message)?.[1];
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return takesCommand && !argv.includes('--')
        ? `unknown option ${option} (if it is meant for the agent, put the agent command after \`--\`)`
        : `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /argument missing/.test(error.message) ? `option ${option?.split(' ')[0] ?? ''} needs a value` : error.message;
    default:
      return error.message;
  }
}

/**
 * Keeps a server command running until Ctrl-C or SIGTERM, then closes it (cancelling its tasks).
 * A second signal exits at once. Resolves with the exit code. Call it before printing that the
 * server is ready: until a listener is installed, a signal kills the process without the close.
 */
export function runUntilSignal(name: string, what: string, close: () => Promise<void>): Promise<number> {
  return new Promise<number>((resolve) => {
    // What started the shutdown: a second signal exits at once; the closed output's own signal (Ctrl-C
    // reaches `tee` and us together) is not a second one.
    let stopping: 'signal' | 'closed output' | undefined;
    const stop = (signal: NodeJS.Signals | 'closed output'): void => {
      const cause = signal === 'closed output' ? signal : 'signal';
      if (stopping && (cause === 'closed output' || stopping === 'closed output')) {
        stopping = cause === 'signal' ? cause : stopping;
        return;
      }
      if (stopping) {
        process.stderr.write(`backchannel ${name}: ${signal} again, exiting now\n`);
        process.exit(EXIT.cancelled);
      }
      stopping = cause;
      process.stderr.write(`backchannel ${name}: stopping (cancelling ${what})…\n`);
      close().then(
        () => resolve(EXIT.ok),
        (error: unknown) => {
          process.stderr.write(`backchannel ${name}: ${(error as Error).message}\n`);
          resolve(EXIT.failed);
        },
      );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // `serve | tee log` and the reader went away (Ctrl-C reaches tee too): the same shutdown.
    whenOutputCloses(() => stop('closed output'));
  });
}

let outputClosed: (() => void) | undefined;

/**
 * What a reader that went away (EPIPE on stdout or stderr) means for this command; main.ts calls it.
 * Without one the command ends at once with 0, as any Unix tool in `| head`; a server sets its
 * shutdown, so its tasks are cancelled and its endpoints removed rather than left.
 */
export function whenOutputCloses(stop: () => void): void {
  outputClosed = stop;
}

/** main.ts: the output was closed. Ends the command (exit 0) unless it set a shutdown of its own. */
export function outputWasClosed(): void {
  if (outputClosed) outputClosed();
  else process.exit(EXIT.ok);
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
type WithHelp<O extends OptionsConfig> = O & { help: { type: 'boolean'; short: 'h' } };
export type CommandLine<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: WithHelp<O>; allowPositionals: true; strict: true }>
>;

/**
 * Parses a subcommand's arguments with `-h/--help` added. Returns the parsed command line, or the
 * exit code when there is nothing left to do: help printed (0) or a usage error printed (2).
 * Positionals are refused unless `allowPositionals` is set; with `allowPositionals === 'command'` the
 * positionals are a command line of their own (`run -- python3 agent.py -v`), so an option after the
 * first positional without a `--` before it is refused rather than silently taken by us.
 */
export function parseCommandLine<O extends OptionsConfig>(
  name: string,
  argv: string[],
  options: O,
  help: string,
  allowPositionals: boolean | 'command' = false,
): CommandLine<O> | number {
  let parsed: CommandLine<O>;
  let tokens: ReturnType<typeof parseArgs<{ tokens: true; strict: false; allowPositionals: true }>>['tokens'];
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } } as WithHelp<O>,
      allowPositionals: true,
      strict: true,
    });
    tokens = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true }).tokens;
  } catch (error) {
    return usageError(`backchannel ${name}: ${describeParseError(error as Error, argv, allowPositionals === 'command')}`, help);
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help + '\n');
    return EXIT.ok;
  }
  if (allowPositionals === 'command' && !tokens.some((token) => token.kind === 'option-terminator')) {
    const first = tokens.findIndex((token) => token.kind === 'positional');
    const late = first < 0 ? undefined : tokens.slice(first).find((token) => token.kind === 'option');
    if (late?.kind === 'option') {
      return usageError(
        `backchannel ${name}: ${late.rawName} comes after the command; put \`--\` before the command ` +
          `(backchannel ${name} [options] -- <command> [args…]) so it is clear whose option it is`,
        help,
      );
    }
  }
  if (!allowPositionals && parsed.positionals.length > 0) {
    return usageError(`backchannel ${name}: unexpected argument "${parsed.positionals[0]}"`, help);
  }
  return parsed;
}
