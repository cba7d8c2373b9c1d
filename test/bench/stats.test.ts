/** bench/lib/stats.js: the children's CPU clock the many-tasks limit row is built on. */
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { childrenCpuMicros } from '../../bench/lib/stats.js';

describe.skipIf(process.platform !== 'linux')('childrenCpuMicros', () => {
  test('counts the CPU of a reaped child, not the wall time it slept', () => {
    const before = childrenCpuMicros()!;
    // A child that burns about 300 ms of CPU, then one that only sleeps 300 ms.
    spawnSync(process.execPath, ['-e', 'const end = process.cpuUsage().user + 300e3; while (process.cpuUsage().user < end);']);
    const afterBusy = childrenCpuMicros()!;
    spawnSync(process.execPath, ['-e', 'setTimeout(() => {}, 300)']);
    const afterSleep = childrenCpuMicros()!;
    expect(afterBusy - before).toBeGreaterThanOrEqual(250_000);
    // The sleeper costs only node's own start, less than the busy child's 300 ms.
    expect(afterSleep - afterBusy).toBeLessThan(afterBusy - before);
  });
});
