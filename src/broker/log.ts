/** The core's logger: the base leaf's (../base/log.ts), under this name so the core's files import it from beside them. */
export { createHeadlessLogger, silentLogger, type HeadlessLoggerOptions, type Logger, type LogLevel } from '../base/log.js';
