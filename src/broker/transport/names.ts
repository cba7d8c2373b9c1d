/**
 * Random endpoint names and task tokens, from one pool of CSPRNG bytes: 16 base32 characters = 80
 * bits for a name, unguessable and short; 32 bytes as hex for a token. Each byte of the pool is used
 * once; the pool is refilled (crypto.randomFillSync) when spent, so a task costs a slice, not a call
 * into OpenSSL per value.
 */
import { randomFillSync } from 'node:crypto';

export const NAME_CHARS = 16;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const POOL_BYTES = 4096;

const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/** `count` fresh random bytes (a view into the pool, valid until the next call). */
function take(count: number): Buffer {
  if (used + count > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const bytes = pool.subarray(used, used + count);
  used += count;
  return bytes;
}

export function randomName(): string {
  const bytes = take(NAME_CHARS);
  let out = '';
  for (const byte of bytes) out += BASE32[byte & 31];
  return out;
}

/** `bytes` random bytes as lowercase hex (a task's token: 32 bytes, 64 characters). */
export function randomHex(bytes: number): string {
  return take(bytes).toString('hex');
}
