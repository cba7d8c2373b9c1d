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

/** Waits until every pid is gone (the one implementation lives with waitFor in core.ts). */
export { waitUntilGone } from './core.js';
