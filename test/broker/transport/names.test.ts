/**
 * Endpoint names and tokens from the pooled CSPRNG bytes (transport/names.ts): the right length and
 * alphabet, and never the same value twice, across many refills of the pool.
 */
import { describe, expect, it } from 'vitest';
import { NAME_CHARS, randomHex, randomName } from '../../../src/broker/transport/names.js';

describe('random names and tokens', () => {
  it('gives 16 base32 characters a name and 64 hex characters a token, each value once, across pool refills', () => {
    const seen = new Set<string>();
    // 4,000 × (16 + 32) bytes: the 4 KiB pool is refilled about 47 times.
    for (let i = 0; i < 4000; i++) {
      const name = randomName();
      const token = randomHex(32);
      expect(name).toMatch(new RegExp(`^[a-z2-7]{${NAME_CHARS}}$`));
      expect(token).toMatch(/^[0-9a-f]{64}$/);
      seen.add(name);
      seen.add(token);
    }
    expect(seen.size).toBe(8000);
  });
});
