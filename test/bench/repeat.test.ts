/** `npm run bench -- --repeat n`: each row is the repeat with the median ratio, with the spread beside it. */
import { describe, expect, test } from 'vitest';
import { combineRepeats } from '../../bench/lib/repeat.js';

const run = (ratio: number, value: number, seconds = 1) => ({
  seconds,
  rows: [
    {
      fig: '1',
      name: 'overhead',
      unit: 'ms',
      value,
      baseline: value / ratio,
      ratio,
      target: { op: '<=', ratio: 1.1 },
      pass: ratio <= 1.1,
      detail: `run ${ratio}`,
    },
    { fig: '1', name: 'info only', unit: 'ms', value },
  ],
});

describe('combineRepeats', () => {
  test('keeps the run with the median ratio and says min/median/max', () => {
    const combined = combineRepeats([run(1.3, 30), run(1.05, 20), run(1.2, 25)]);
    const [overhead, info] = combined.rows;
    expect(overhead).toMatchObject({ ratio: 1.2, value: 25, pass: false, spread: { of: 'ratio', min: 1.05, median: 1.2, max: 1.3 } });
    expect(overhead.detail).toBe('3 repeats, ratio min/median/max 1.05× / 1.20× / 1.30×; run 1.2');
    // A row without a ratio goes by its value.
    expect(info).toMatchObject({ value: 25, spread: { of: 'value', min: 20, median: 25, max: 30 } });
    expect(combined.seconds).toBe(3);
    expect(combined.repeats).toBe(3);
  });

  test('a failed repeat makes the module an error, not a quieter median', () => {
    const combined = combineRepeats([run(1.05, 20), { error: 'exited with 1', seconds: 2, rows: [] }]);
    expect(combined).toMatchObject({ error: 'exited with 1', seconds: 3 });
  });
});
