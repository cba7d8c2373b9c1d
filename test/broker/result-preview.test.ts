/**
 * A big result's preview (`ResultSummary.preview`) is the first 400 characters of its data's JSON,
 * made without serialising the whole of it: the same text as `JSON.stringify(data).slice(0, 400)`
 * for every kind of value, cuts inside strings, escapes and surrogate pairs included.
 */
import { describe, expect, test } from 'vitest';
import { jsonPrefix } from '../../src/broker/history/results.js';

const reference = (value: unknown, max: number): string => (JSON.stringify(value) ?? '').slice(0, max);

/** A deterministic pseudo-random generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['a', 'é', '你', '🙂', '"', '\\', '\n', '\u0001', '\u2028', '\ud800', '\udfff', '</script>'];

function randomValue(next: () => number, depth = 0): unknown {
  const kind = Math.floor(next() * (depth > 3 ? 6 : 9));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return [0, -0, 1.5, -3e21, 1e-7, Number.NaN, Number.POSITIVE_INFINITY, 42][Math.floor(next() * 8)];
    case 3:
    case 4:
    case 5: {
      let text = '';
      const n = Math.floor(next() * 300);
      for (let i = 0; i < n; i++) text += PIECES[Math.floor(next() * PIECES.length)];
      return text;
    }
    case 6:
      return Array.from({ length: Math.floor(next() * 6) }, () => (next() < 0.1 ? undefined : randomValue(next, depth + 1)));
    default: {
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(next() * 6); i > 0; i--) {
        const key = next() < 0.2 ? String(Math.floor(next() * 10)) : `k${PIECES[Math.floor(next() * PIECES.length)]}${i}`;
        object[key] = next() < 0.1 ? undefined : randomValue(next, depth + 1);
      }
      return object;
    }
  }
}

describe('the preview of a big result', () => {
  test('is JSON.stringify(data).slice(0, max) for 5,000 random values and limits', () => {
    const next = random(22);
    for (let i = 0; i < 5000; i++) {
      const value = randomValue(next);
      const max = 1 + Math.floor(next() * 500);
      expect(jsonPrefix(value, max), JSON.stringify(value)).toBe(reference(value, max));
    }
  });

  test('cuts a 10 MB string, a surrogate pair at the cut, and values JSON.stringify treats specially', () => {
    const big = 'x'.repeat(398) + '🙂' + 'y'.repeat(10 * 1024 * 1024);
    for (const max of [398, 399, 400, 401, 402]) expect(jsonPrefix(big, max)).toBe(reference(big, max));
    expect(jsonPrefix({ text: big, after: 1 }, 400)).toBe(reference({ text: big, after: 1 }, 400));
    const special = [undefined, () => 1, new Date(0), { toJSON: () => 'mine' }, [undefined, () => 1], { a: undefined, b: 2 }, new Map()];
    for (const value of special) expect(jsonPrefix(value, 400)).toBe(reference(value, 400));
    expect(() => jsonPrefix({ n: 1n }, 400)).toThrow(TypeError);
  });
});
