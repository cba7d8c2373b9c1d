// The 10 MB result string shared by figure 2's senders: base64 text, so JSON needs no escaping.
import { randomBytes } from 'node:crypto';

export const BIG_RESULT_BYTES = 10 * 1024 * 1024;
export function bigString() {
  return randomBytes((BIG_RESULT_BYTES / 4) * 3).toString('base64');
}
export const wallNow = () => performance.timeOrigin + performance.now();
