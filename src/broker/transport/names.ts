/** Random endpoint names: 16 base32 characters = 80 bits, unguessable and short. */
import { randomBytes } from 'node:crypto';

export const NAME_CHARS = 16;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

export function randomName(): string {
  const bytes = randomBytes(NAME_CHARS);
  let out = '';
  for (const byte of bytes) out += BASE32[byte & 31];
  return out;
}
