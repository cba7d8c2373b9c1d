/** The memory rows' warm-up: batches until the measure settles, bounded, with every figure kept. */
import { describe, expect, test } from 'vitest';
import { describeWarmUp, warmUntilSteady } from '../../bench/lib/warm-up.js';

/** A measure that reads the next figure of `figures` after each batch. */
function scripted(figures: number[]) {
  let batches = 0;
  return {
    batch: async () => {
      batches += 1;
    },
    measure: () => figures[Math.min(batches, figures.length - 1)]!,
    batches: () => batches,
  };
}

describe('warmUntilSteady', () => {
  test('runs batches while the figure grows by more than the tolerance, and stops at the first that settles', async () => {
    const run = scripted([56, 72, 88, 92, 93, 150]);
    const result = await warmUntilSteady(run.batch, run.measure, { tolerance: 0.05 });
    // 72 > 56·1.05, 88 > 72·1.05, 92 ≤ 88·1.05: three batches, and the sixth figure is never reached.
    expect(result).toEqual({ figures: [56, 72, 88, 92], steady: true });
    expect(run.batches()).toBe(3);
  });

  test('a shrinking figure is settled', async () => {
    const run = scripted([80, 70]);
    expect(await warmUntilSteady(run.batch, run.measure)).toEqual({ figures: [80, 70], steady: true });
  });

  test('stops at maxBatches and says the figure never settled', async () => {
    const run = scripted([10, 20, 40, 80, 160]);
    const result = await warmUntilSteady(run.batch, run.measure, { maxBatches: 3 });
    expect(result).toEqual({ figures: [10, 20, 40, 80], steady: false });
    expect(run.batches()).toBe(3);
    expect(describeWarmUp(result, 'RSS', 'MB')).toBe('3 warm-up batches (not steady by then): RSS 10 → 20 → 40 → 80 MB');
  });

  test('minBatches runs at least that many even when the first settles', async () => {
    const run = scripted([50, 50, 50, 50]);
    const result = await warmUntilSteady(run.batch, run.measure, { minBatches: 2 });
    expect(result.figures).toHaveLength(3);
    expect(describeWarmUp(result, 'RSS', 'MB')).toBe('2 warm-up batches: RSS 50 → 50 → 50 MB');
  });

  test('one batch is described in the singular', () => {
    expect(describeWarmUp({ figures: [61, 62], steady: true }, 'RSS', 'MB')).toBe('1 warm-up batch: RSS 61 → 62 MB');
  });
});
