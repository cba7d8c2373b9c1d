/**
 * Debian's redis-server for tests: started on a free port in a private directory (append-only
 * file on, so a restart keeps what was written), stopped by the caller. `.ci/run` installs it; where
 * it is missing, `REDIS_MISSING` says so and the suites that need it skip with that reason.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
/** Why the Redis tests cannot run here, or undefined when they can. */
export const REDIS_MISSING =
  found.status === 0
    ? undefined
    : 'redis-server is not installed (`sudo apt-get install redis-server`; npm test installs it when run as root)';

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM; it writes its data) and starts it again on the same port and directory, `downMs` later. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The kernel's ephemeral ports (its local ports for outgoing connections and for `listen(0)`):
 * `/proc/sys/net/ipv4/ip_local_port_range`, or Linux's default.
 */
function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port outside the ephemeral range. A port from `listen(0)` is an ephemeral one: while Redis
 * was down for a restart (or between this choice and its start), any outgoing connection on the
 * machine, or another test's `listen(0)`, could take it, and Redis then failed to start ("Address
 * already in use"): the restart test's setup failures on a busy shared machine.
 */
async function freePort(): Promise<number> {
  const [low] = ephemeralPorts();
  const floor = Math.min(20_000, low - 1000);
  for (let tries = 0; tries < 100; tries++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${floor} and ${low} after 100 tries`);
}

/** Resolves when the process prints `text` (no polling; usable from vitest and Playwright alike). */
export function outputOf(child: ChildProcess, text: string, what: string, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => done(new Error(`timed out waiting for ${what}: ${out}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(text)) done();
    };
    const onExit = () => done(new Error(`${what}: the process exited: ${out}`));
    const done = (error?: Error) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(out);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** `args` are added to redis-server's command line (e.g. `--requirepass`). */
export async function startRedis(extraArgs: string[] = []): Promise<TestRedis> {
  if (REDIS_MISSING) throw new Error(REDIS_MISSING);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', ...extraArgs];
    const started = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    await outputOf(started, 'Ready to accept connections', `redis-server on port ${port}`);
    started.stdout?.resume();
    started.stderr?.resume();
  };
  const halt = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    // Redis writes its append-only file on SIGTERM; one that does not exit within 10 s is killed.
    const force = setTimeout(() => running.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(force);
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    restart: async (downMs = 0) => {
      await halt();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await launch();
    },
    stop: async () => {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface HungRedis {
  /** `redis://127.0.0.1:<port>` of a server that answers a client's handshake, then nothing. */
  readonly url: string;
  /** Connections whose handshake it answered, in all. */
  readonly handshakes: number;
  /** Connections open now. */
  readonly open: number;
  close(): Promise<void>;
}

/**
 * A Redis that hangs once a client has connected: it answers the handshake (ioredis's `CLIENT`
 * commands and its ready check, the first `INFO`), then reads every later command and answers none.
 * A BullMQ connection to it stays in its start-up (its own `INFO`, the version check) for as long
 * as it lives.
 */
export async function startHungRedis(): Promise<HungRedis> {
  const sockets = new Set<net.Socket>();
  let handshakes = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    let infoAnswered = false;
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      // Each request is a RESP array: `*<n>\r\n` then n bulk strings `$<len>\r\n<bytes>\r\n`.
      for (;;) {
        const command = takeCommand(pending);
        if (!command) break;
        pending = pending.slice(command.length);
        const name = command.args[0]?.toUpperCase();
        if (name === 'CLIENT') socket.write('+OK\r\n');
        else if (name === 'INFO' && !infoAnswered) {
          infoAnswered = true;
          handshakes++;
          const info = '# Server\r\nredis_version:7.2.0\r\nloading:0\r\n';
          socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`);
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    get handshakes() {
      return handshakes;
    },
    get open() {
      return sockets.size;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The first whole RESP request in `text`: its arguments and its length in characters; undefined until it is whole. */
function takeCommand(text: string): { args: string[]; length: number } | undefined {
  const header = /^\*(\d+)\r\n/.exec(text);
  if (!header) return undefined;
  let at = header[0].length;
  const args: string[] = [];
  for (let i = 0; i < Number(header[1]); i++) {
    const bulk = /^\$(\d+)\r\n/.exec(text.slice(at));
    if (!bulk) return undefined;
    const start = at + bulk[0].length;
    const end = start + Number(bulk[1]);
    if (text.length < end + 2) return undefined;
    args.push(text.slice(start, end));
    at = end + 2;
  }
  return { args, length: at };
}
