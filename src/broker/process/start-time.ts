/**
 * A process's start time, recorded with its pid so that a restarted broker can tell its own
 * leftover agent from an unrelated process that got the same pid later (pids are reused).
 * Linux: field 22 of /proc/<pid>/stat (clock ticks since boot); macOS and other BSDs: `ps -o lstart=`.
 * Undefined where it cannot be read (the process is gone, or the platform has neither).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export function processStartTime(pid: number): string | undefined {
  try {
    if (process.platform === 'linux') {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields[19];
    }
    if (process.platform === 'win32') return undefined;
    const text = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return text.trim() || undefined;
  } catch {
    return undefined;
  }
}
