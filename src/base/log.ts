/**
 * The logger every layer uses (base/ is the leaf under them all: it knows nothing of Backchannel).
 * Logging goes through electron-log: in Electron the shell passes `electron-log/main`; headless code
 * (CLI, serve, tests) uses `electron-log/node` with the same API. The broker only sees this interface.
 */
import electronLog from 'electron-log/node.js';

export interface Logger {
  error(...params: unknown[]): void;
  warn(...params: unknown[]): void;
  info(...params: unknown[]): void;
  debug(...params: unknown[]): void;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface HeadlessLoggerOptions {
  /** Log file; `false` to log to the console only. */
  file?: string | false;
  /** Console level, or `false` for no console output. @default 'warn' */
  console?: LogLevel | false;
  /** File level. @default 'info' */
  fileLevel?: LogLevel;
}

let counter = 0;
/** The name electron-log would otherwise look for in a package.json. */
const APP_NAME = 'backchannel';

/** An electron-log instance for plain Node (each call gets its own, so tests and servers do not share). */
export function createHeadlessLogger(options: HeadlessLoggerOptions = {}): Logger & { filePath: string | undefined } {
  const log = electronLog.create({ logId: `backchannel-${process.pid}-${counter++}` });
  log.transports.console.level = options.console ?? 'warn';
  const file = options.file;
  if (file) {
    // electron-log reads the app's name from the nearest package.json even when the path is given;
    // without one (serve started in an empty directory) it threw inside and wrote nothing, silently.
    log.transports.file.setAppName(APP_NAME);
    log.transports.file.resolvePathFn = () => file;
    log.transports.file.level = options.fileLevel ?? 'info';
  } else {
    log.transports.file.level = false;
  }
  return Object.assign(
    {
      error: (...p: unknown[]) => log.error(...p),
      warn: (...p: unknown[]) => log.warn(...p),
      info: (...p: unknown[]) => log.info(...p),
      debug: (...p: unknown[]) => log.debug(...p),
    },
    { filePath: file || undefined },
  );
}

/** Logs nothing; the library default, so embedding apps are not spammed. */
export const silentLogger: Logger = { error() {}, warn() {}, info() {}, debug() {} };
