/**
 * The bridge's errors are the one front-end error vocabulary (src/model/errors.ts): both hosts turn a
 * refused call into an `ErrorBody`; both clients turn it back into a `BridgeError`. Runs anywhere.
 */
import { ERROR_CODES, type ErrorCode } from '../model/errors.js';

export {
  BridgeError,
  BROKER_ERROR_CODES,
  ERROR_CODES,
  errorFromBody,
  exitCodeOf,
  fromCoreError,
  httpStatusOf,
  isErrorCode,
  isRecord,
  mcpErrorOf,
  toErrorBody,
  type BrokerErrorCode,
  type ErrorBody,
  type ErrorCode,
} from '../model/errors.js';

export type BridgeErrorCode = ErrorCode;

/** HTTP status for each error code (the IPC host carries the code itself): the table's `http` column. */
export const HTTP_STATUS = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, info]) => [code, info.http])) as Record<
  ErrorCode,
  number
>;
