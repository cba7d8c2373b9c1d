/**
 * Ends a sub-agent's whole process tree — the one implementation, for the core and every front-end
 * that starts processes (the gateway imports it too).
 *
 * On POSIX the agent is spawned `detached`, so it leads its own process group and `kill(-pid)`
 * reaches its grandchildren too (a grandchild that calls setsid() has left the group on purpose and
 * is out of reach). On Windows, `taskkill /T /F`.
 *
 * API:
 * - `terminateTree(pid, { delayMs, graceMs, exited })`: SIGTERM after `delayMs`, SIGKILL `graceMs`
 *   later, each skipped once `exited()` is true. Returns a function that cancels what is still pending.
 * - `killTree(pid, signal)`: one signal to the group now; false when the group is gone.
 * - `groupAlive(pid)`: true while any process of the group is alive.
 */
import { spawn } from 'node:child_process';

export interface TerminateOptions {
  /** Time before SIGTERM (e.g. a cancelled agent's chance to stop by itself). @default 0 */
  delayMs?: number;
  /** Time from SIGTERM to SIGKILL. */
  graceMs: number;
  /** The leader has exited: nothing more to send. @default never */
  exited?: () => boolean;
}

/** SIGTERM (after `delayMs`), then SIGKILL after `graceMs`. Returns a cancel function for the pending steps. */
export function terminateTree(pid: number, { delayMs = 0, graceMs, exited = () => false }: TerminateOptions): () => void {
  const timers: NodeJS.Timeout[] = [];
  const term = () => {
    if (!exited()) killTree(pid, 'SIGTERM');
    timers.push(setTimeout(() => !exited() && killTree(pid, 'SIGKILL'), graceMs));
  };
  if (delayMs > 0) timers.push(setTimeout(term, delayMs));
  else term();
  return () => {
    for (const timer of timers) clearTimeout(timer);
  };
}

export function killTree(pid: number, signal: NodeJS.Signals): boolean {
  if (process.platform === 'win32') {
    spawn('taskkill', ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true }).on('error', () => {});
    return true;
  }
  const failed = signalError(-pid, signal);
  if (failed === undefined) return true;
  if (failed.code === 'ESRCH') return false;
  throw failed;
}

/**
 * `process.kill(target, signal)`, its failure returned, not thrown. The error is made without a
 * stack: a group already gone (ESRCH) is the usual answer at a task's end, and capturing the stack
 * of that error was most of the call's cost.
 */
function signalError(target: number, signal: NodeJS.Signals | 0): NodeJS.ErrnoException | undefined {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(target, signal);
    return undefined;
  } catch (error) {
    return error as NodeJS.ErrnoException;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** True while any process of the group led by `pid` is alive. */
export function groupAlive(pid: number): boolean {
  if (process.platform === 'win32') {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  const failed = signalError(-pid, 0);
  return failed === undefined || failed.code === 'EPERM';
}
