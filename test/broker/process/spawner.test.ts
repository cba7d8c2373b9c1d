/**
 * The spawner thread's protocol, with real processes: start, output in order, exit, the errors
 * `describeSpawnError` reads, a process group of the child's own, backpressure down to the pipe, and
 * what the children of a thread that stops get.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeSpawnError } from '../../../src/broker/process/spawn-agent.js';
import { OUTPUT_WINDOW_BYTES } from '../../../src/broker/process/spawner-thread.js';
import { Spawner, SpawnerStopped, type AgentProcess, type SpawnRequest } from '../../../src/broker/process/spawner.js';

let spawner: Spawner;
let dir: string;
const pids: number[] = [];

beforeEach(() => {
  spawner = new Spawner();
  dir = mkdtempSync(path.join(tmpdir(), 'bc-spawner-'));
});
afterEach(async () => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await spawner.stop();
  rmSync(dir, { recursive: true, force: true });
});

function request(file: string, args: string[], overrides: Partial<SpawnRequest> = {}): SpawnRequest {
  return { file, args, cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, detached: true, ...overrides };
}

/** Everything a child reports, in order of arrival. */
function record(child: AgentProcess) {
  const events: string[] = [];
  let stdout = '';
  let stderr = '';
  const spawned = new Promise<number>((resolve) =>
    child.once('spawn', () => {
      events.push('spawn');
      pids.push(child.pid!);
      resolve(child.pid!);
    }),
  );
  const error = new Promise<NodeJS.ErrnoException>((resolve) =>
    child.once('error', (e) => {
      events.push('error');
      resolve(e);
    }),
  );
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => {
      events.push('exit');
      resolve([code, signal]);
    }),
  );
  const ended = (stream: NodeJS.ReadableStream, add: (text: string) => void) =>
    new Promise<void>((resolve) => {
      stream.setEncoding('utf8');
      stream.on('data', add);
      stream.once('end', resolve);
    });
  const streams = () => Promise.all([ended(child.stdout, (t) => (stdout += t)), ended(child.stderr, (t) => (stderr += t))]);
  return { events, spawned, error, exit, streams, output: () => ({ stdout, stderr }) };
}

async function until<T>(what: string, probe: () => T | undefined | false, limit = 3000): Promise<T> {
  for (let i = 0; i < limit; i++) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting: ${what}`);
}

/** Processes of the group led by `pgid` that are still running (not gone, not zombies), from /proc. */
function liveMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** Where a process sleeps in the kernel ('' once it is gone). */
function wchan(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/wchan`, 'utf8');
  } catch {
    return '';
  }
}

describe('Spawner', () => {
  it('starts a program, passes its stdout and stderr in order, and reports its exit code', async () => {
    const script =
      'for (let i = 0; i < 200; i++) { process.stdout.write(`out ${i}\\n`); process.stderr.write(`err ${i}\\n`); } process.exitCode = 3;';
    const child = spawner.spawn(request(process.execPath, ['-e', script]));
    const seen = record(child);
    const streams = seen.streams();
    expect(child.pid).toBeUndefined();
    const pid = await seen.spawned;
    expect(child.pid).toBe(pid);
    expect(await seen.exit).toEqual([3, null]);
    await streams;
    const numbers = (text: string, tag: string) =>
      text
        .trimEnd()
        .split('\n')
        .map((line) => line.replace(`${tag} `, ''));
    const expected = Array.from({ length: 200 }, (_, i) => String(i));
    expect(numbers(seen.output().stdout, 'out')).toEqual(expected);
    expect(numbers(seen.output().stderr, 'err')).toEqual(expected);
    await until('the thread to let the child go', () => spawner.holding === 0);
  });

  it('sends what one turn of either loop has to say as one message: ten children started at once wake the hub far fewer than fifty times', async () => {
    const children = Array.from({ length: 10 }, () => record(spawner.spawn(request('/bin/sh', ['-c', 'exit 0']))));
    await Promise.all(children.map(async (child) => Promise.all([child.exit, child.streams(), child.spawned])));
    // Each child says 'spawned', 'end' twice, 'exit' and 'closed': 50 messages, and nothing is lost.
    await until('every child closed', () => spawner.holding === 0);
    expect(spawner.received.messages).toBe(50);
    // The ten requests came in one batch, so their ten 'spawned' answers leave in one.
    expect(spawner.received.batches).toBeLessThanOrEqual(41);
    for (const child of children) expect(child.events).toEqual(['spawn', 'exit']);
  });

  it('passes the environment and working directory it is given, and nothing else', async () => {
    const child = spawner.spawn(request('/bin/sh', ['-c', 'pwd; echo "$ONLY_THIS,${HOME:-no home}"'], { env: { ONLY_THIS: 'yes' } }));
    const seen = record(child);
    const streams = seen.streams();
    await seen.exit;
    await streams;
    expect(seen.output().stdout).toBe(`${dir}\nyes,no home\n`);
  });

  it('reports a missing program as an error with ENOENT, no pid and no exit', async () => {
    const child = spawner.spawn(request(path.join(dir, 'missing'), []));
    const seen = record(child);
    const error = await seen.error;
    expect(error.code).toBe('ENOENT');
    expect(child.pid).toBeUndefined();
    expect(describeSpawnError('missing', error)).toBe('command not found: missing');
    await seen.streams();
    expect(seen.events).toEqual(['error']);
    expect(spawner.holding).toBe(0);
  });

  it('reports a file that is not executable as an error with EACCES', async () => {
    const file = path.join(dir, 'not-executable.sh');
    writeFileSync(file, '#!/bin/sh\nexit 0\n');
    chmodSync(file, 0o644);
    const seen = record(spawner.spawn(request(file, [])));
    const error = await seen.error;
    expect(error.code).toBe('EACCES');
    expect(describeSpawnError('not-executable.sh', error)).toBe('command is not executable (permission denied): not-executable.sh');
  });

  it('reports arguments Node refuses (a NUL byte) as an error, not an exception', async () => {
    const seen = record(spawner.spawn(request('/bin/echo', ['a\0b'])));
    const error = await seen.error;
    expect(error.code).toBe('ERR_INVALID_ARG_VALUE');
  });

  it('starts the child as the leader of a process group of its own', async () => {
    const seen = record(spawner.spawn(request('/bin/sh', ['-c', 'exec sleep 300'])));
    const pid = await seen.spawned;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])).toBe(pid);
    process.kill(-pid, 'SIGTERM');
    expect(await seen.exit).toEqual([null, 'SIGTERM']);
  });

  it('makes a child that writes faster than its reader wait on its pipe, and loses no byte', async () => {
    // 64 chunks of 64 KiB (4 MiB); the shell counts each one written on stderr.
    const chunks = 64;
    const script = `i=0; while [ $i -lt ${chunks} ]; do head -c 65536 /dev/zero || exit 1; echo $i >&2; i=$((i+1)); done`;
    const child = spawner.spawn(request('/bin/sh', ['-c', script]));
    const seen = record(child);
    const pid = await seen.spawned;
    let written = 0;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => (written += text.split('\n').length - 1));
    let maxBuffered = 0;
    // Nothing reads stdout: the writer ends up blocked in write() on its full pipe (a socket pair under Node).
    await until('the writer to block on its full pipe', () => {
      maxBuffered = Math.max(maxBuffered, child.stdout.readableLength);
      if (child.stdout.readableLength < child.stdout.readableHighWaterMark) return false;
      return liveMembers(pid).some((member) => /(pipe_write|sock_alloc_send_pskb)$/.test(wchan(member)));
    });
    maxBuffered = Math.max(maxBuffered, child.stdout.readableLength);
    // What the hub holds stays bounded (its buffer, the credit window, one chunk), and the child is far from done.
    expect(maxBuffered).toBeLessThanOrEqual(child.stdout.readableHighWaterMark + OUTPUT_WINDOW_BYTES + 65536);
    expect(written).toBeLessThan(chunks / 2);
    let bytes = 0;
    child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length));
    const ended = new Promise((resolve) => child.stdout.once('end', resolve));
    expect(await seen.exit).toEqual([0, null]);
    await ended;
    expect(bytes).toBe(chunks * 65536);
  });

  it('kills the process group of a running child when its thread stops, and fails it with the reason', async () => {
    const seen = record(spawner.spawn(request('/bin/sh', ['-c', 'sleep 300 & sleep 300'])));
    const streams = seen.streams();
    const pid = await seen.spawned;
    await until('the shell to start its two sleeps', () => liveMembers(pid).length >= 3);
    await spawner.stop();
    const error = await seen.error;
    expect(error).toBeInstanceOf(SpawnerStopped);
    expect(error.message).toBe(`the spawner thread stopped (exit code 1); the agent (pid ${pid}) was killed`);
    expect(await seen.exit).toEqual([null, 'SIGKILL']);
    await streams;
    await until('the whole group to be gone', () => liveMembers(pid).length === 0);
    expect(seen.events).toEqual(['spawn', 'error', 'exit']);
    expect(spawner.holding).toBe(0);
  });

  it('fails a spawn still in flight when its thread stops, and starts a new thread for the next one', async () => {
    const first = spawner.spawn(request('/bin/sh', ['-c', 'exec sleep 300']));
    const seen = record(first);
    const thread = spawner.threadId;
    await spawner.stop();
    const error = await seen.error;
    expect(error).toBeInstanceOf(SpawnerStopped);
    expect(error.message).toMatch(/^(could not start the agent: )?the spawner thread stopped \(exit code \d+\)/);
    if (first.pid !== undefined) await until('the started child to be gone', () => liveMembers(first.pid!).length === 0);

    const next = record(spawner.spawn(request('/bin/sh', ['-c', 'echo again'])));
    expect(spawner.threadId).not.toBe(thread);
    const streams = next.streams();
    expect(await next.exit).toEqual([0, null]);
    await streams;
    expect(next.output().stdout).toBe('again\n');
  });

  it('closes in the thread the pipes the hub destroys, so a grandchild holding them does not keep the child held', async () => {
    // The shell exits at once; its background sleep keeps both pipes open.
    const child = spawner.spawn(request('/bin/sh', ['-c', 'sleep 300 & echo started']));
    const seen = record(child);
    const pid = await seen.spawned;
    expect(await seen.exit).toEqual([0, null]);
    expect(spawner.holding).toBe(1);
    // As an attempt's cleanup does, with the sleep still running.
    child.stdout.destroy();
    child.stderr.destroy();
    await until('the thread to let the child go', () => spawner.holding === 0);
    expect(liveMembers(pid)).toHaveLength(1);
  });
});

describe('the spawner thread and the life of the process', () => {
  it('keeps a process alive while it holds a child, and lets it exit once the child is done', async () => {
    const { spawn } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const dist = fileURLToPath(new URL('../../../dist/broker/process/spawn-agent.js', import.meta.url));
    // The script does nothing after starting its child: only the thread holding the child keeps it alive.
    const script = `import { spawnAgent } from ${JSON.stringify(dist)};
      const child = spawnAgent({ file: '/bin/sh', args: ['-c', 'sleep 1; echo done'], env: {} }, '/', {});
      child.stdout.on('data', (d) => process.stdout.write(d));
      child.once('exit', (code) => process.stdout.write('exit ' + code + '\\n'));`;
    const probe = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    probe.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => probe.once('exit', resolve));
    try {
      // Without the hold the script would end before the child's second; without the release, never.
      expect(await exited).toBe(0);
      expect(out).toBe('done\nexit 0\n');
    } finally {
      if (probe.exitCode === null) probe.kill('SIGKILL');
    }
  });
});
