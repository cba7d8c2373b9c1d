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
