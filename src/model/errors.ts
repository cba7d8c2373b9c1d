/**
 * The one error vocabulary of every front-end boundary: the control endpoint, the hub's HTTP API,
 * the panel's bridge (IPC and HTTP), MCP and the CLI. An error is `{code, message, data?}` with its
 * code from ONE table (`ERROR_CODES`), which also says what each code is at each boundary: the HTTP
 * status, the CLI's exit code, the MCP (JSON-RPC) error code. The core's own errors (`BrokerError`)
 * keep their codes and are mapped onto this table once (`BROKER_ERROR_CODES`, `fromCoreError`).
 * Runs anywhere: no Node or DOM imports.
 */

/** JSON-RPC error codes MCP uses (the SDK's `ErrorCode`, without importing the SDK into the model). */
const JSON_RPC = { invalidParams: -32602, internalError: -32603 } as const;

/** The CLI's exit codes for a failure (`EXIT` in src/cli/command.ts): 1 failed, 2 usage. */
const CLI_EXIT = { failed: 1, usage: 2 } as const;

export interface ErrorCodeInfo {
  /** The hub's HTTP status for it (the control endpoint and the panel's HTTP bridge). */
  readonly http: number;
  /** The CLI's exit code when a command fails with it. */
  readonly exit: number;
  /** The JSON-RPC error code an MCP request failing with it gets (`data.code` carries the code itself). */
  readonly mcp: number;
  /** What it means, for people. */
  readonly meaning: string;
}

/** The table. A wire value never changes: clients older than a code read an unknown one as `internal`. */
export const ERROR_CODES = {
  invalid_request: {
    http: 400,
    exit: CLI_EXIT.usage,
    mcp: JSON_RPC.invalidParams,
    meaning: 'the request is malformed or an argument is out of range',
  },
  not_found: {
    http: 404,
    exit: CLI_EXIT.failed,
    mcp: JSON_RPC.invalidParams,
    meaning: 'no such task, attachment, worktree, schedule or route',
  },
  conflict: {
    http: 409,
    exit: CLI_EXIT.failed,
    mcp: JSON_RPC.invalidParams,
    meaning: 'not now: the task is running, finished, not waiting, or the hub is closing',
  },
  refused: {
    http: 403,
    exit: CLI_EXIT.failed,
    mcp: JSON_RPC.invalidParams,
    meaning: 'the run policy does not allow this command line from its door (docs/run-policy.md)',
  },
  internal: { http: 500, exit: CLI_EXIT.failed, mcp: JSON_RPC.internalError, meaning: 'a fault on the serving side' },
  hub_lost: {
    http: 503,
    exit: CLI_EXIT.failed,
    mcp: JSON_RPC.internalError,
    meaning: 'the hub cannot be reached, or went away (its control endpoint closed); `data.path` names the endpoint',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Every code, in the table's order. */
export const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as readonly ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** The JSON every boundary sends for a refused call. `data`: facts for programs (any JSON), when there are some. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; data?: unknown };
}

const BRAND = Symbol.for('backchannel.BridgeError');

/**
 * The one front-end error: a code from the table, a message for people, optional JSON `data` for
 * programs, and the original error as `cause` (never sent). Survives JSON (`toBody`/`errorFromBody`)
 * and is recognisable across realms and module copies (`BridgeError.is`).
 */
export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  readonly [BRAND] = true;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly data?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }

  static is(value: unknown): value is BridgeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.data !== undefined) error.data = this.data;
    return { error };
  }
}

/**
 * The core's error codes (`BrokerError.code`, src/broker/errors.ts) and the one code each is at the
 * boundary. Declared here, below the core, so the core's error type and this mapping cannot drift.
 */
export const BROKER_ERROR_CODES = {
  unknown_task: 'not_found',
  invalid_option: 'invalid_request',
  not_retryable: 'conflict',
  closed: 'conflict',
  worktree: 'conflict',
  /** The run policy does not allow the task's command line from its origin (nothing was registered). */
  refused: 'refused',
  endpoint: 'internal',
  data_dir: 'internal',
  data_dir_in_use: 'internal',
} as const satisfies Record<string, ErrorCode>;

export type BrokerErrorCode = keyof typeof BROKER_ERROR_CODES;

/**
 * Anything thrown behind a boundary as the one error: a `BridgeError` as it is; a core error by its
 * code (`BROKER_ERROR_CODES`; the core's error is kept as `cause`); anything else `internal`.
 */
export function fromCoreError(error: unknown): BridgeError {
  if (BridgeError.is(error)) return error;
  const reason = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof reason === 'string' && Object.hasOwn(BROKER_ERROR_CODES, reason)) {
    const code = BROKER_ERROR_CODES[reason as BrokerErrorCode];
    return new BridgeError(code, message, undefined, { cause: error });
  }
  return new BridgeError('internal', message, undefined, { cause: error });
}

/** Turns anything thrown by a call into the shared error body. */
export function toErrorBody(error: unknown): ErrorBody {
  return fromCoreError(error).toBody();
}

/** A received error body as the error (an unknown code is `internal`; a malformed body says so). */
export function errorFromBody(body: unknown): BridgeError {
  if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
    const { code, message, data } = body.error;
    return new BridgeError(isErrorCode(code) ? code : 'internal', message, data);
  }
  return new BridgeError('internal', 'Malformed error from the bridge host');
}

/** The HTTP status of an error code (`ERROR_CODES[code].http`). */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODES[code].http;
}

/** The CLI exit code for anything a command failed with (`ERROR_CODES[code].exit`). */
export function exitCodeOf(error: unknown): number {
  return ERROR_CODES[fromCoreError(error).code].exit;
}

/** The JSON-RPC error an MCP request failing with `error` gets: `{code, message, data: {code, ...data}}`. */
export function mcpErrorOf(error: unknown): { code: number; message: string; data: Record<string, unknown> } {
  const failure = fromCoreError(error);
  const data: Record<string, unknown> = isRecord(failure.data)
    ? { ...failure.data, code: failure.code }
    : failure.data === undefined
      ? { code: failure.code }
      : { code: failure.code, data: failure.data };
  return { code: ERROR_CODES[failure.code].mcp, message: failure.message, data };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
