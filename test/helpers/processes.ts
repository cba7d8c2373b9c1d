/** Process checks for tests that must leave nothing running. */
import fs from 'node:fs';

/** True if `pid` runs (a zombie waiting for a reaper counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS): trust kill(0)
  }
}

/** Waits until every pid is gone, polling; rejects with the survivors after `timeoutMs`. */
export async function waitUntilGone(pids: number[], timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = pids.filter(isAlive);
    if (alive.length === 0) return;
    if (Date.now() > deadline) throw new Error(`still running after ${timeoutMs} ms: ${alive.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
