/**
 * A fleet worker's agents die with it (docs/scale-out.md and docs/reliability.md: a worker's death). Agents lead process groups of
 * their own, so a worker killed with SIGKILL used to leave them running unwatched: they finished
 * their work and nobody took their results, while the broker ran it again elsewhere.
 *
 * The keeper is a small process the worker starts beside itself, in a process group of its own,
 * holding the read end of a pipe whose write end only the worker has. The worker tells it each
 * agent it starts (pid and process start time) and each that ends. When the pipe closes — the
 * worker exited, however it died — the keeper stops every agent still listed whose pid *and* start
 * time still match (SIGTERM to its group `SPOOL_GRACE_MS` later, SIGKILL `KILL_GRACE_MS` after
 * that), then exits. Linux has PR_SET_PDEATHSIG for this, but Node cannot set it without native
 * code, and it would not reach the agents' own children.
 *
 * The keeper's program is source text run with `node -e` (as spawner-thread.ts is for a thread):
 * the same text works from src/, dist/ and a packaged app. It imports only Node.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { processStartTime } from '../broker/process/start-time.js';

/** The agents' grace between SIGTERM and SIGKILL when their worker is gone (as the core's kill grace). */
export const KILL_GRACE_MS = 1000;
/**
 * Before SIGTERM: an agent that was finishing as its worker died gets no acknowledgement and
 * spools its result; this leaves it the time to (the worker that comes back adopts it: ./adopt.ts).
 */
export const SPOOL_GRACE_MS = 500;

/** The keeper's program: reads `+ <pid> <start>` and `- <pid>` lines; at end of input, stops those listed. */
const KEEPER_SOURCE = `
const { readFileSync } = require('node:fs');
const { execFileSync } = require('node:child_process');
const listed = new Map();
const startOf = (pid) => {
  try {
    if (process.platform === 'linux') {
      const stat = readFileSync('/proc/' + pid + '/stat', 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    }
    return execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
};
const signal = (pid, name) => {
  try {
    if (startOf(pid) === listed.get(pid)) process.kill(-pid, name);
  } catch {}
};
let carry = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (carry + chunk).split('\\n');
  carry = lines.pop();
  for (const line of lines) {
    const [op, pid, start] = line.split(' ');
    if (op === '+' && Number(pid) > 0 && start) listed.set(Number(pid), start);
    else if (op === '-') listed.delete(Number(pid));
  }
});
let over = false;
const stopAll = () => {
  if (over) return;
  over = true;
  if (listed.size === 0) return process.exit(0);
  setTimeout(() => {
    for (const pid of listed.keys()) signal(pid, 'SIGTERM');
    setTimeout(() => {
      for (const pid of listed.keys()) signal(pid, 'SIGKILL');
      process.exit(0);
    }, ${KILL_GRACE_MS});
  }, ${SPOOL_GRACE_MS});
};
process.stdin.on('end', stopAll);
process.stdin.on('close', stopAll);
process.stdin.on('error', stopAll);
`;

export class AgentKeeper {
  private readonly child: ChildProcess | undefined;

  /** Starts the keeper; where it cannot start, the worker runs without it (and says so through `warn`). */
  constructor(warn: (message: string) => void) {
    if (process.platform === 'win32') return;
    try {
      this.child = spawn(process.execPath, ['-e', KEEPER_SOURCE], {
        // Its own process group: a signal to the worker's group does not take the keeper with it.
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        // Electron's binary runs the script as Node only with this set.
        env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      });
      this.child.on('error', (error) => warn(`the agents' keeper could not start (${error.message}); agents may outlive a killed worker`));
      this.child.stdin!.on('error', () => {});
      // Neither the keeper nor its pipe keeps the worker alive.
      this.child.unref();
      (this.child.stdin as unknown as { unref?: () => void }).unref?.();
    } catch (error) {
      warn(`the agents' keeper could not start (${(error as Error).message}); agents may outlive a killed worker`);
    }
  }

  /** The keeper's pid (for tests and logs), while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** An agent started: stopped with the worker from now on. */
  started(pid: number): void {
    const start = processStartTime(pid);
    if (start !== undefined) this.write(`+ ${pid} ${start}\n`);
  }

  /** An agent's attempt is over: the keeper forgets it. */
  ended(pid: number): void {
    this.write(`- ${pid}\n`);
  }

  /** The worker closes: the keeper stops what is still listed (nothing, after a clean close) and exits. */
  close(): void {
    this.child?.stdin?.end();
  }

  private write(line: string): void {
    const stdin = this.child?.stdin;
    if (stdin && !stdin.destroyed) stdin.write(line);
  }
}
