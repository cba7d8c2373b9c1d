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
