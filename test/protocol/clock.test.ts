import { describe, expect, test } from 'vitest';
import { isoNow, isoString } from '../../src/protocol/index.js';

describe('isoString', () => {
  test('matches toISOString for edge dates and 10,000 random ones', () => {
    const dates = [
      Date.UTC(2026, 0, 1, 0, 0, 0, 0),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(1999, 8, 9, 9, 9, 9, 9),
      Date.UTC(2000, 1, 29, 12, 30, 45, 50),
      Date.UTC(1000, 0, 1),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    for (let i = 0; i < 10_000; i++) dates.push(Math.floor(Math.random() * Date.UTC(9999, 11, 31)) + Date.UTC(1000, 0, 1));
    for (const time of dates) expect(isoString(new Date(time))).toBe(new Date(time).toISOString());
  });

  test('outside years 1000-9999, and for an invalid date, it is toISOString itself', () => {
    for (const time of [Date.UTC(999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), Date.UTC(-50, 5, 5), 8.64e15]) {
      expect(isoString(new Date(time))).toBe(new Date(time).toISOString());
    }
    expect(() => isoString(new Date(Number.NaN))).toThrow(RangeError);
  });

  test('isoNow is the current time in ISO 8601', () => {
    const before = Date.now();
    const now = Date.parse(isoNow());
    expect(now).toBeGreaterThanOrEqual(before - 1);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
