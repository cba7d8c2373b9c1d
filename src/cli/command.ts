import { parseArgs, type ParseArgsConfig } from 'node:util';

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

/** Prints `message` and the usage text to stderr, returns the usage exit code. */
export function usageError(message: string, help: string): number {
  process.stderr.write(`${message}\n\n${help}\n`);
  return EXIT.usage;
}

/**
 * Keeps a server command running until Ctrl-C or SIGTERM, then closes it (cancelling its tasks).
 * A second signal exits at once. Resolves with the exit code.
 */
export function runUntilSignal(name: string, what: string, close: () => Promise<void>): Promise<number> {
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) {
        process.stderr.write(`backchannel ${name}: ${signal} again, exiting now\n`);
        process.exit(EXIT.cancelled);
      }
      stopping = true;
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
  });
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
type WithHelp<O extends OptionsConfig> = O & { help: { type: 'boolean'; short: 'h' } };
export type CommandLine<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: WithHelp<O>; allowPositionals: true; strict: true }>
>;

/**
 * Parses a subcommand's arguments with `-h/--help` added. Returns the parsed command line, or the
 * exit code when there is nothing left to do: help printed (0) or a usage error printed (2).
 * Positionals are refused unless `allowPositionals` is set.
 */
export function parseCommandLine<O extends OptionsConfig>(
  name: string,
  argv: string[],
  options: O,
  help: string,
  allowPositionals = false,
): CommandLine<O> | number {
  let parsed: CommandLine<O>;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } } as WithHelp<O>,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    return usageError(`backchannel ${name}: ${(error as Error).message}`, help);
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help + '\n');
    return EXIT.ok;
  }
  if (!allowPositionals && parsed.positionals.length > 0) {
    return usageError(`backchannel ${name}: unexpected argument "${parsed.positionals[0]}"`, help);
  }
  return parsed;
}
