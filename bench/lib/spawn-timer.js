/**
 * How long `child_process.spawn()` holds the calling thread. libuv's spawn forks and then waits, on a
 * pipe, for the child's exec() to succeed or fail: the CPU is the fork (the page tables' copy), the
 * rest of the wall time is the child waiting for a core before it can exec. On a machine whose cores
 * the agents fill, that wait is the broker's event loop standing still. Wraps the module's export
 * (ESM importers see it: `syncBuiltinESMExports`) until `stop()`.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

export function timeSpawns() {
  const original = childProcess.spawn;
  const totals = { calls: 0, cpuMs: 0, wallMs: 0 };
  childProcess.spawn = function timedSpawn(...args) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const cpu = process.cpuUsage(cpu0);
      totals.calls += 1;
      totals.cpuMs += (cpu.user + cpu.system) / 1000;
      totals.wallMs += performance.now() - t0;
    }
  };
  syncBuiltinESMExports();
  return {
    totals,
    stop() {
      childProcess.spawn = original;
      syncBuiltinESMExports();
      return totals;
    },
  };
}
