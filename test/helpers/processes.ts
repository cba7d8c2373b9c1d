/** Process checks for tests that must leave nothing running. */
import { spawn } from 'node:child_process';
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

/** What a crashed server leaves: a process that listened on the socket `file` and was SIGKILLed (no unlink). */
export async function leaveStaleSocket(file: string): Promise<void> {
  const victim = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(file)}, () => console.log('up'))`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => victim.stdout.once('data', resolve));
  victim.kill('SIGKILL');
  await new Promise((resolve) => victim.once('exit', resolve));
}
