/**
 * Signals a sub-agent's whole process tree. On POSIX the agent is spawned `detached`, so it leads its
 * own process group and `kill(-pid)` reaches its grandchildren too (a grandchild that calls setsid()
 * has left the group on purpose and is out of reach). On Windows, `taskkill /T /F`.
 */
import { spawn } from 'node:child_process';

export function killTree(pid: number, signal: NodeJS.Signals): boolean {
  if (process.platform === 'win32') {
    spawn('taskkill', ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true }).on('error', () => {});
    return true;
  }
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
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
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
