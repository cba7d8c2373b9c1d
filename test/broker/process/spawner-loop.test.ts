/**
 * The hub's loop answers while a spawn is in flight (issue 36 item 2). A spawn is made slow on
 * purpose and deterministically: strace, attached to the probe process, holds every execve of its
 * children for EXEC_DELAY_S seconds (`inject=execve:delay_enter`). The forked child is then visibly
 * waiting before its exec (same command line as its parent); a `ping` sent at that moment is answered
 * before the spawn completes when the spawn runs on the spawner thread, and only after it when it runs
 * on the loop itself (the control case: it shows the probe can tell the two apart). Needs dist/
 * (`npm run build`) and strace (Debian's `strace`); skipped, saying so, without strace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('../../fixtures/spawn-probe.mjs', import.meta.url));
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((file) => existsSync(file));
/** Long enough that an answer not blocked by the spawn comes well inside it, even on a loaded machine. */
const EXEC_DELAY_S = 10;

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Lines of a child's stdout (or stderr), and a wait for one matching a pattern. */
function lines(stream: NodeJS.ReadableStream): { seen: string[]; next(pattern: RegExp): Promise<string> } {
  const seen: string[] = [];
  const waiting: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) {
      seen.push(line);
      for (const w of waiting.filter((w) => w.pattern.test(line))) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  return {
    seen,
    next: (pattern) =>
      new Promise((resolve) => {
        const line = seen.find((l) => pattern.test(l));
        if (line !== undefined) resolve(line);
        else waiting.push({ pattern, resolve });
      }),
  };
}

/** The pids whose parent is `pid` (from /proc/<pid>/stat; the command name may hold spaces). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

function cmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Bounded wait on a condition polled every `everyMs`; throws with `what` when it never holds. */
async function until<T>(what: string, probe: () => T | undefined, limit = 3000, everyMs = 10): Promise<T> {
  for (let i = 0; i < limit; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`gave up waiting: ${what}`);
}

/** Starts the probe under strace, starts a spawn, and pings while the child waits before its exec. */
async function pingDuringSpawn(mode: 'thread' | 'loop'): Promise<{ order: string[]; preExecAtPong: boolean }> {
  const probe = spawn(process.execPath, [FIXTURE, mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  started.push(probe);
  const out = lines(probe.stdout!);
  await out.next(/^ready$/);
  const pid = probe.pid!;
  const strace = spawn(
    STRACE!,
    ['-f', '-o', '/dev/null', '-e', 'trace=execve', '-e', `inject=execve:delay_enter=${EXEC_DELAY_S}000000`, '-p', String(pid)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  started.push(strace);
  await lines(strace.stderr!).next(new RegExp(`Process ${pid} attached`));
  const own = cmdline(pid);
  probe.stdin!.write('spawn\n');
  // The forked child, held before its exec: it still has its parent's command line.
  const child = await until('a child waiting before its exec', () => childrenOf(pid).find((c) => cmdline(c) === own));
  probe.stdin!.write('ping\n');
  await out.next(/^pong$/);
  const preExecAtPong = cmdline(child) === own;
  await out.next(/^(spawned|error)/);
  probe.stdin!.end();
  return { order: out.seen.filter((l) => l !== 'ready').map((l) => l.split(' ')[0]!), preExecAtPong };
}

describe.skipIf(!STRACE || process.platform !== 'linux')('the loop while a spawn waits for its exec', () => {
  it('answers a request before the spawn completes when spawning on the spawner thread', async () => {
    const { order, preExecAtPong } = await pingDuringSpawn('thread');
    expect(order).toEqual(['pong', 'spawned']);
    expect(preExecAtPong).toBe(true);
  });

  it('answers only after the spawn completes when spawning on the loop itself (the probe tells them apart)', async () => {
    const { order, preExecAtPong } = await pingDuringSpawn('loop');
    expect(order).toEqual(['spawned', 'pong']);
    expect(preExecAtPong).toBe(false);
  });
});
