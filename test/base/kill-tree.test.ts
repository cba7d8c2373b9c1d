/**
 * kill-tree.ts with real process groups: `groupAlive` and `killTree` answer for a group that lives
 * and for one that is gone, and the usual "gone" answer (ESRCH) leaves the process's stack-trace
 * limit as it found it (the error behind it is made without a stack, for speed).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { groupAlive, killTree } from '../../src/base/kill-tree.js';

const posix = process.platform !== 'win32';

/** A detached `sleep`: the leader of a process group of its own. */
function sleeper(): { pid: number; exited: Promise<NodeJS.Signals | null> } {
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  return { pid: child.pid!, exited };
}

describe.runIf(posix)('kill-tree', () => {
  it('sees a live group, kills it, then sees it gone; the ESRCH answers leave Error.stackTraceLimit as they found it', async () => {
    const limit = Error.stackTraceLimit;
    const { pid, exited } = sleeper();
    expect(groupAlive(pid)).toBe(true);
    expect(killTree(pid, 'SIGKILL')).toBe(true);
    expect(await exited).toBe('SIGKILL');
    expect(groupAlive(pid)).toBe(false);
    expect(killTree(pid, 'SIGTERM')).toBe(false);
    expect(Error.stackTraceLimit).toBe(limit);
    // Errors made afterwards still carry their stack.
    expect(new Error('after').stack).toContain('kill-tree.test.ts');
  });

  it('throws what is not "gone" (an invalid signal), with the limit restored', () => {
    const limit = Error.stackTraceLimit;
    const { pid } = sleeper();
    try {
      expect(() => killTree(pid, 'SIGNOPE' as NodeJS.Signals)).toThrow();
      expect(Error.stackTraceLimit).toBe(limit);
    } finally {
      killTree(pid, 'SIGKILL');
    }
  });
});
