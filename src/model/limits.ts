/**
 * The sizes every door to the broker accepts, declared once: `backchannel run`, the hub's control
 * endpoint and panel API, MCP and the gateway refuse the same things with the same words.
 */
import { DEFAULT_MAX_LINE_BYTES } from '../protocol/line-limit.js';

/** A task's input travels to the agent as one protocol line, so it can never be larger than a line. */
export const MAX_INPUT_BYTES = DEFAULT_MAX_LINE_BYTES;

/** A submission's JSON body: the input and the rest of the request (command line, a caller's environment). */
export const MAX_SUBMIT_BYTES = MAX_INPUT_BYTES + 4 * 1024 * 1024;

/** A schedule's fire records on one page of `getSchedule` by default (its newest), and at most. */
export const FIRE_PAGE_SIZE = 50;
export const MAX_FIRE_PAGE_SIZE = 500;

/** `67108864` as `64 MiB`, for messages. */
export function formatLimit(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  if (Number.isInteger(mib)) return `${mib} MiB`;
  const kib = bytes / 1024;
  return Number.isInteger(kib) ? `${kib} KiB` : `${bytes} bytes`;
}

/** Throws a one-line error when `input` serialises to more than `MAX_INPUT_BYTES`. */
export function checkInputSize(input: unknown, what = 'the input'): void {
  if (input === undefined) return;
  const bytes = new TextEncoder().encode(JSON.stringify(input) ?? '').length;
  if (bytes > MAX_INPUT_BYTES) {
    throw new RangeError(
      `${what} is ${bytes} bytes, over the ${formatLimit(MAX_INPUT_BYTES)} limit (it travels to the agent as one protocol line)`,
    );
  }
}
