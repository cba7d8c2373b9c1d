/**
 * Shared statistics and clocks for every benchmark. Figures are medians over repeated runs; tails
 * (p99, p99.9) come from the pooled samples of one run.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Wall clock in epoch milliseconds with sub-millisecond resolution, comparable across processes. */
export function wallNow() {
  return performance.timeOrigin + performance.now();
}

/** CPU time (user + system) of this process in microseconds. */
export function cpuMicros() {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Burns `us` microseconds of this process's CPU (not of wall time: a preempted burn goes on after). */
export function burnCpu(us) {
  if (!(us > 0)) return;
  const end = cpuMicros() + us;
  while (cpuMicros() < end);
}

let clockTicks;

/**
 * CPU time (user + system) of this process's ended, reaped children in microseconds (cutime + cstime
 * of /proc/self/stat, in clock ticks), or undefined where there is no /proc. What the agents themselves
 * cost, next to what the broker costs around them.
 */
export function childrenCpuMicros() {
  let stat;
  try {
    stat = readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces) start at field 3; cutime and cstime are 16 and 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;
  return ((Number(fields[13]) + Number(fields[14])) * 1e6) / clockTicks;
}

/**
 * What the scheduler says of a process's main thread (/proc/<pid>/schedstat): microseconds on a CPU
 * and microseconds runnable but waiting for one; undefined where there is no /proc or the process is gone.
 */
export function schedStat(pid = process.pid) {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { cpuUs: onCpu / 1000, waitUs: waiting / 1000 };
  } catch {
    return undefined;
  }
}

/** `after` − `before` of two schedStat() readings, per `count` (undefined if either is missing). */
export function schedStatPer(before, after, count) {
  if (!before || !after) return undefined;
  return { cpuUs: (after.cpuUs - before.cpuUs) / count, waitUs: (after.waitUs - before.waitUs) / count };
}

export function median(values) {
  return percentile(values, 50);
}

/** Nearest-rank percentile of unsorted numbers (p in 0..100). NaN when empty. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** p50/p90/p99/p99.9/min/max/mean of one sample set. */
export function summarize(values) {
  const sorted = Float64Array.from(values).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    min: sorted[0],
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max: sorted[sorted.length - 1],
    mean: sum / sorted.length,
  };
}

/** Median of each field over several summaries (one per repeated run). */
export function medianOf(summaries, field) {
  return median(summaries.map((s) => s[field]));
}

export function round(value, digits = 2) {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * Collects samples from `count` runs of each variant, interleaved so drift hits them all alike.
 * A variant that takes longer than `limitMs` fails the benchmark with its name (no silent hang).
 */
export async function interleave(count, variants, limitMs = 120_000) {
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let i = 0; i < count; i++) {
    for (const [name, fn] of Object.entries(variants)) {
      let timer;
      const limit = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`variant "${name}" took longer than ${limitMs / 1000} s (run ${i + 1})`)), limitMs);
      });
      try {
        samples[name].push(await Promise.race([fn(i), limit]));
      } finally {
        clearTimeout(timer);
      }
    }
  }
  return samples;
}
