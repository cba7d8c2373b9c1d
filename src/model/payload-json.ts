/**
 * A big final payload's JSON text, made once per payload object. A 10 MB result is serialized for
 * its follower's stream (src/hub/control/follow.ts) and for its file in `results/`
 * (src/broker/history/results.ts), in the same turn of the event loop, from the same object: the
 * second `JSON.stringify` (~40 ms, and as much again in GC, on a loaded machine) is not needed.
 *
 * Final payloads are not changed once a task has one. The text is kept only while its payload
 * object lives (a WeakMap), and only for payloads over the inline limit: small ones are cheaper to
 * serialize again than to remember.
 */
import type { FinalPayload } from '../protocol/index.js';
import { RESULT_INLINE_MAX_BYTES } from './task.js';

const texts = new WeakMap<FinalPayload, string>();

/** `JSON.stringify(payload)`; the same string again for the same (big) payload object. */
export function payloadJson(payload: FinalPayload): string {
  const known = texts.get(payload);
  if (known !== undefined) return known;
  const json = JSON.stringify(payload);
  if (json.length > RESULT_INLINE_MAX_BYTES) texts.set(payload, json);
  return json;
}
