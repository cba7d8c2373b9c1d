/**
 * A process's start time, recorded with its pid so that a restarted broker can tell its own
 * leftover agent from an unrelated process that got the same pid later (pids are reused).
 * Linux: field 22 of /proc/<pid>/stat (clock ticks since boot); macOS and other BSDs: `ps -o lstart=`.
 * Undefined where it cannot be read (the process is gone, or the platform has neither).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

/** /proc/<pid>/stat is a few hundred bytes; read into this buffer, reused (once per spawned agent). */
const STAT_BUFFER = Buffer.alloc(4096);

export function processStartTime(pid: number): string | undefined {
  try {
    if (process.platform === 'linux') {
      const stat = readProcStat(pid);
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

/**
 * The text of /proc/<pid>/stat: one open, read and close into a reused buffer (readFileSync adds an
 * fstat and a buffer per call, at every task's start). A text as long as the buffer is read again whole.
 */
function readProcStat(pid: number): string {
  const file = `/proc/${pid}/stat`;
  const fd = openSync(file, 'r');
  let read: number;
  try {
    read = readSync(fd, STAT_BUFFER, 0, STAT_BUFFER.length, 0);
  } finally {
    closeSync(fd);
  }
  return read < STAT_BUFFER.length ? STAT_BUFFER.toString('latin1', 0, read) : readFileSync(file, 'utf8');
}
