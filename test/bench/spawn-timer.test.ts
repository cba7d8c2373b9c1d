/** The spawn timer of figure 5: counts every spawn() an ES module makes, with its CPU and wall time, until stopped. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect, test } from 'vitest';
import { timeSpawns } from '../../bench/lib/spawn-timer.js';

const child = async () => {
  const proc = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(proc, 'exit');
};

test('times the spawn() calls made through an ES import while it runs, and none after stop()', async () => {
  const timer = timeSpawns();
  await child();
  await child();
  const totals = timer.stop();
  expect(totals.calls).toBe(2);
  expect(totals.wallMs).toBeGreaterThan(0);
  expect(totals.cpuMs).toBeGreaterThanOrEqual(0);
  expect(totals.wallMs).toBeLessThan(30_000);
  await child();
  expect(totals.calls).toBe(2);
});
