/** bench/lib/stats.js: the CPU clocks the many-tasks and round-trip limit figures are built on. */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { burnCpu, childrenCpuMicros, cpuMicros, schedStat, schedStatPer } from '../../bench/lib/stats.js';

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

describe.skipIf(process.platform !== 'linux')('schedStat', () => {
  test("reads a running process's CPU and its wait for one; undefined once it is gone", async () => {
    // A child that burns about 200 ms of CPU, then waits to be killed.
    const child = spawn(
      process.execPath,
      [
        '-e',
        'const end = process.cpuUsage().user + 200e3; while (process.cpuUsage().user < end); process.stdout.write("done"); setInterval(() => {}, 1000);',
      ],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    const before = schedStat(child.pid)!;
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const after = schedStat(child.pid)!;
    const per = schedStatPer(before, after, 2)!;
    expect(per.cpuUs * 2).toBeGreaterThanOrEqual(150_000);
    expect(per.waitUs).toBeGreaterThanOrEqual(0);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(schedStat(child.pid)).toBeUndefined();
    expect(schedStatPer(before, undefined, 1)).toBeUndefined();
  });
});

test('burnCpu burns at least the CPU it is given, and nothing for zero', () => {
  const before = cpuMicros();
  burnCpu(20_000);
  expect(cpuMicros() - before).toBeGreaterThanOrEqual(20_000);
  const idle = cpuMicros();
  burnCpu(0);
  expect(cpuMicros() - idle).toBeLessThan(5_000);
});
