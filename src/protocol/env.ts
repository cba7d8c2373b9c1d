/** Names of the hand-off variables and argv flag, shared by the broker and every agent runtime. */
export const ENV_TASK_ID = 'CURSOR_TASK_ID';
export const ENV_IPC_PATH = 'CURSOR_IPC_PATH';
export const ENV_IPC_TOKEN = 'CURSOR_IPC_TOKEN';
export const ENV_TASK_ATTEMPT = 'CURSOR_TASK_ATTEMPT';
/** Milliseconds between heartbeats the broker asks for (a third of its watchdog); absent = none required. */
export const ENV_HEARTBEAT_MS = 'CURSOR_HEARTBEAT_MS';
/** Directory for spool files when the broker is gone (see docs/reliability.md). */
export const ENV_SPOOL_DIR = 'CURSOR_SPOOL_DIR';
/** Overrides where the broker creates its private endpoint directory. */
export const ENV_IPC_DIR = 'CURSOR_IPC_DIR';
export const ARG_TASK_ID = '--task-id=';
/**
 * The task's budget, for an agent that can pass it on to its own CLI (the claude-code template's
 * `--max-turns`, `--max-budget-usd`); the broker enforces it either way. Absent = no such limit.
 */
export const ENV_MAX_TOKENS = 'BACKCHANNEL_MAX_TOKENS';
export const ENV_MAX_COST_USD = 'BACKCHANNEL_MAX_COST_USD';
export const ENV_MAX_TURNS = 'BACKCHANNEL_MAX_TURNS';

/** The SSE-style prefix of a fallback payload line on stdout. */
export const STDOUT_PREFIX = 'data: ';

/** Every variable of the hand-off (an agent removes them after reading, see docs/protocol.md §1). */
export const HAND_OFF_VARIABLES = [ENV_TASK_ID, ENV_IPC_PATH, ENV_IPC_TOKEN, ENV_TASK_ATTEMPT, ENV_HEARTBEAT_MS, ENV_SPOOL_DIR] as const;
