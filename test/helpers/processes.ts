/** Process checks for tests that must leave nothing running. */
import { spawn, spawnSync } from 'node:child_process';
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

/**
 * Live processes whose environment says they report to an endpoint in `ipcDir`: every sub-agent of
 * that broker and every descendant that kept the environment (a grandchild that ignores SIGTERM
 * too). Zombies count as gone. Linux only (`/proc`); elsewhere none are found.
 */
export function agentProcesses(ipcDir: string): number[] {
  const needle = Buffer.from(`CURSOR_IPC_PATH=${ipcDir}/`);
  const found: number[] = [];
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return found;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let environ: Buffer;
    try {
      environ = fs.readFileSync(`/proc/${name}/environ`);
    } catch {
      continue;
    }
    if (environ.includes(needle) && isAlive(Number(name))) found.push(Number(name));
  }
  return found;
}

/**
 * SIGKILLs, by pid, every process a test's broker or hub started under `ipcDir` that still runs: a
 * test that failed or timed out before its own checks must not leave its agents (a hub killed with
 * SIGKILL does not stop them; they lead their own process groups). Called from afterEach.
 */
export function killAgentsUnder(ipcDir: string): number[] {
  const pids = agentProcesses(ipcDir);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Why a test cannot run a process as another local user (`nobody`) here; undefined when it can. */
export const cannotRunAsNobody: string | undefined =
  process.platform !== 'linux'
    ? 'other users are told apart on Linux only'
    : spawnSync('setpriv', ['--version']).error
      ? 'setpriv is not installed'
      : process.getuid?.() !== 0
        ? 'switching to nobody needs root'
        : undefined;

/** Runs `script` (node -e) as nobody; `last()` is the last JSON line it printed, `stop()` SIGKILLs it. */
export function runAsNobody<T>(script: string, initial: T) {
  const child = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], {
    cwd: '/',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let last = initial;
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const lines = out.split('\n');
    out = lines.pop()!;
    if (lines.length > 0) last = JSON.parse(lines.at(-1)!) as T;
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    last: () => last,
    running,
    async stop() {
      if (!running()) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    },
  };
}
