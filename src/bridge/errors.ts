/**
 * The bridge's one error class and its JSON shape. Both hosts turn a refused call into a
 * `BridgeErrorBody`; both clients turn it back into a `BridgeError`. Runs anywhere.
 */
import type { BridgeErrorBody } from './contract.js';

export type BridgeErrorCode = BridgeErrorBody['error']['code'];

const BRAND = Symbol.for('backchannel.BridgeError');

/** A refused bridge call. Survives JSON (code + message) and is recognisable across realms. */
export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  readonly [BRAND] = true;

  constructor(
    readonly code: BridgeErrorCode,
    message: string,
  ) {
    super(message);
  }

  static is(value: unknown): value is BridgeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  toBody(): BridgeErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/** HTTP status for each error code (the IPC host carries the code itself). */
export const HTTP_STATUS: Record<BridgeErrorCode, number> = {
  not_found: 404,
  invalid_request: 400,
  conflict: 409,
  refused: 403,
  internal: 500,
};

/** Turns anything thrown by a bridge implementation into the shared error body. */
export function toErrorBody(error: unknown): BridgeErrorBody {
  if (BridgeError.is(error)) return error.toBody();
  const message = error instanceof Error ? error.message : String(error);
  return { error: { code: 'internal', message } };
}

export function errorFromBody(body: unknown): BridgeError {
  if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
    const code = body.error.code;
    const known = code === 'not_found' || code === 'invalid_request' || code === 'conflict' || code === 'refused' || code === 'internal';
    return new BridgeError(known ? code : 'internal', body.error.message);
  }
  return new BridgeError('internal', 'Malformed error from the bridge host');
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
