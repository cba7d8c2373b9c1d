/**
 * One broker per data directory. Two brokers on one history interrupt each other: the second reads
 * the first one's running tasks as "interrupted", adopts their spool files, rewrites the journal and
 * stops their agents as orphans. So a broker takes its data directory with a lock that dies with its
 * process, before anything touches the directory.
 *
 * Node has no flock(): the lock is a Unix socket listening at `<dataDir>/broker.lock` (0600, in the
 * 0700 data directory). The kernel closes it when the process dies, however it dies: a connect is
 * then refused, and a lock refused twice, STALE_SOCKET_RECHECK_MS apart, is stale and taken over.
 * Whoever connects to a live lock reads one JSON line: the holder's pid and, for a hub, its control
 * endpoint (so a front-end that missed the hub at the well-known path still finds it through the
 * data directory). The socket is bound under a random name and then linked (absent) or renamed
 * (stale) into place, both atomic, and Node never unlinks the lock's own name on close: a broker
 * only ever removes its own lock. When the path would pass the socket path limit, the lock lives in
 * `/tmp/bc-locks-<uid>/<hash of the data directory>` instead. Windows: a named pipe per directory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, lstatSync, mkdirSync, realpathSync, renameSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BrokerError } from '../errors.js';
import { MAX_SOCKET_PATH_BYTES, STALE_SOCKET_RECHECK_MS } from '../transport/endpoint.js';
import { ensureDataDir } from './data-dir.js';

export const LOCK_FILE = 'broker.lock';
const IS_WINDOWS = process.platform === 'win32';
/** How long a probe waits for the holder's line; a live holder whose event loop is busy is still a holder. */
const PROBE_TIMEOUT_MS = 1000;

/** What a live lock tells who connects. */
export interface LockHolder {
  pid?: number;
  /** The control endpoint of the hub that owns this broker, once it listens. */
  control?: string;
}

export interface DataDirLock {
  readonly dir: string;
  /** The lock's socket path. */
  readonly path: string;
  /** Adds to what the lock tells who connects (a hub: its control endpoint). */
  advertise(info: Omit<LockHolder, 'pid'>): void;
  /**
   * The next `lockDataDir(dir)` in this process takes this lock over instead of failing: a hub locks
   * the directory before it writes its log there, then creates the broker that owns the lock.
   */
  handOver(): void;
  /** Removes the lock (only if it is still ours) and stops listening. Idempotent. */
  release(): Promise<void>;
}

interface Holding {
  server: Server;
  path: string;
  ino: number | undefined;
  info: LockHolder;
  handedOver: boolean;
  released?: Promise<void>;
}

/** The locks this process holds, by data directory (resolved). */
const held = new Map<string, Holding>();
const claiming = new Set<string>();

function keyOf(dir: string): string {
  const resolved = path.resolve(dir);
  try {
    return realpathSync(resolved);
  } catch {
    return resolved;
  }
}

function uidTag(): string {
  return typeof process.getuid === 'function' ? String(process.getuid()) : os.userInfo().username;
}

/** The lock's path, and the directory its temporary names go in (the same file system, for link and rename). */
export function lockPathOf(dir: string, outside = false): { path: string; dir: string } {
  const hash = () => createHash('sha256').update(keyOf(dir)).digest('hex').slice(0, 32);
  if (IS_WINDOWS) return { path: `\\\\.\\pipe\\backchannel-lock-${hash()}`, dir: '' };
  const inDir = path.join(dir, LOCK_FILE);
  // The temporary name ".broker.lock-<8 hex>" is the longer one.
  if (!outside && Buffer.byteLength(inDir) + 10 <= MAX_SOCKET_PATH_BYTES) return { path: inDir, dir };
  const short = path.join('/tmp', `bc-locks-${uidTag()}`);
  return { path: path.join(short, `${hash()}.lock`), dir: short };
}

function inUse(dir: string, holder: LockHolder | undefined, self = false): BrokerError {
  const pid = self ? `this process, pid ${process.pid}` : holder?.pid !== undefined ? `pid ${holder.pid}` : 'pid unknown';
  const hub = holder?.control ? `, its hub's control endpoint ${holder.control}` : '';
  return new BrokerError(
    'data_dir_in_use',
    `Data directory ${dir} is in use by another Backchannel broker (${pid}${hub}); two brokers on one history would interrupt each other's tasks. Use that one, stop it first, or choose another data directory.`,
  );
}

/**
 * Takes `dir` (created 0700 or checked, as ensureDataDir) for this broker. Throws a BrokerError with
 * code `data_dir_in_use`, naming the directory and the holder's pid, when a live broker holds it.
 */
export async function lockDataDir(dir: string, recheckMs = STALE_SOCKET_RECHECK_MS): Promise<DataDirLock> {
  const key = keyOf(dir);
  const mine = held.get(key);
  if (mine) {
    // Checked before the first await: a broker created right after handOver() takes it at once.
    if (!mine.handedOver) throw inUse(dir, mine.info, true);
    mine.handedOver = false;
    return lockHandle(dir, key, mine);
  }
  if (claiming.has(key)) throw inUse(dir, { pid: process.pid }, true);
  claiming.add(key);
  try {
    ensureDataDir(dir);
    const holding = IS_WINDOWS ? await takePipe(dir) : await takeSocket(dir, recheckMs);
    held.set(key, holding);
    return lockHandle(dir, key, holding);
  } finally {
    claiming.delete(key);
  }
}

function lockHandle(dir: string, key: string, holding: Holding): DataDirLock {
  return {
    dir,
    path: holding.path,
    advertise(info) {
      Object.assign(holding.info, info);
    },
    handOver() {
      holding.handedOver = true;
    },
    release() {
      holding.released ??= (async () => {
        if (held.get(key) === holding) held.delete(key);
        // Still listening while the name is removed: nobody can judge it stale and take it meanwhile.
        if (!IS_WINDOWS && holding.ino !== undefined && lstatSync(holding.path, { throwIfNoEntry: false })?.ino === holding.ino) {
          try {
            unlinkSync(holding.path);
          } catch {
            // already gone
          }
        }
        await new Promise<void>((resolve) => holding.server.close(() => resolve()));
      })();
      return holding.released;
    },
  };
}

/** A server that tells each connection who holds the lock, and keeps no process alive. */
function lockServer(info: LockHolder): Server {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.end(JSON.stringify(info) + '\n');
  });
  server.on('error', () => {});
  return server;
}

function listen(server: Server, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(where, () => {
      server.off('error', onError);
      server.unref();
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A data directory the lock cannot be created in (a read-only disk, which still serves its history). */
const UNWRITABLE = new Set(['EROFS', 'EACCES', 'EPERM']);

async function takeSocket(dataDir: string, recheckMs: number): Promise<Holding> {
  let where = lockPathOf(dataDir);
  if (where.dir !== dataDir) ensureShortDir(where.dir);
  const sleep = () => new Promise((resolve) => setTimeout(resolve, recheckMs));
  for (let round = 0; round < 5; round++) {
    const info: LockHolder = { pid: process.pid };
    const server = lockServer(info);
    const temp = path.join(where.dir, `.${LOCK_FILE}-${randomBytes(4).toString('hex')}`);
    try {
      await listen(server, temp);
    } catch (error) {
      if (where.dir !== dataDir || !UNWRITABLE.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
      // A broker that locked it while it was writable still holds it there.
      const inDir = await probeLock(where.path);
      if (inDir.state === 'live') throw inUse(dataDir, inDir.holder);
      where = lockPathOf(dataDir, true);
      ensureShortDir(where.dir);
      round -= 1;
      continue;
    }
    chmodSync(temp, 0o600);
    const ino = lstatSync(temp).ino;
    const holding: Holding = { server, path: where.path, ino, info, handedOver: false };
    try {
      linkSync(temp, where.path);
      unlinkSync(temp);
      return holding;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        await closeServer(server);
        throw error;
      }
    }
    // Someone's lock is there: live, or left by a process that died.
    let probe = await probeLock(where.path);
    if (probe.state === 'stale') {
      await sleep();
      probe = await probeLock(where.path);
    }
    if (probe.state === 'live') {
      await closeServer(server);
      throw inUse(dataDir, probe.holder);
    }
    if (probe.state === 'none') {
      await closeServer(server);
      continue;
    }
    renameSync(temp, where.path);
    // Another broker that judged it stale at the same moment may have renamed its own over ours.
    await sleep();
    if (lstatSync(where.path, { throwIfNoEntry: false })?.ino === ino) return holding;
    await closeServer(server);
    const winner = await probeLock(where.path);
    if (winner.state === 'live') throw inUse(dataDir, winner.holder);
  }
  throw new BrokerError(
    'data_dir_in_use',
    `Data directory ${dataDir}: could not take its lock ${where.path}; another broker keeps starting there`,
  );
}

async function takePipe(dataDir: string): Promise<Holding> {
  const where = lockPathOf(dataDir).path;
  const info: LockHolder = { pid: process.pid };
  const server = lockServer(info);
  try {
    await listen(server, where);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    const probe = await probeLock(where);
    throw inUse(dataDir, probe.state === 'live' ? probe.holder : undefined);
  }
  return { server, path: where, ino: undefined, info, handedOver: false };
}

function ensureShortDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) {
    throw new BrokerError(
      'data_dir',
      `Lock directory ${dir} is not a directory of our own; remove it or choose a data directory with a shorter path`,
    );
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

type Probe = { state: 'live'; holder: LockHolder | undefined } | { state: 'stale' | 'none' };

/** Connects to a lock: `live` (with what the holder says), `stale` (refused), or `none` (no such file). */
function probeLock(where: string): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = createConnection(where);
    let text = '';
    let connected = false;
    const done = (probe: Probe) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(probe);
    };
    const live = () => done({ state: 'live', holder: parseHolder(text) });
    const timer = setTimeout(live, PROBE_TIMEOUT_MS);
    socket.setEncoding('utf8');
    socket.on('connect', () => (connected = true));
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n') || text.length > 4096) live();
    });
    socket.on('end', live);
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (connected) return live();
      // Only a refusal means nobody listens (EAGAIN: a full backlog, a live holder).
      done(
        error.code === 'ENOENT'
          ? { state: 'none' }
          : error.code === 'ECONNREFUSED'
            ? { state: 'stale' }
            : { state: 'live', holder: undefined },
      );
    });
  });
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text.split('\n')[0]!) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, control } = value as Record<string, unknown>;
    return { ...(typeof pid === 'number' ? { pid } : {}), ...(typeof control === 'string' ? { control } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Who holds `dir`'s lock, or undefined when no live broker does. Read-only: creates, removes and
 * changes nothing (a stale lock is left for the next broker).
 */
export async function readLockHolder(dir: string): Promise<LockHolder | undefined> {
  // In the directory, else where a broker on a read-only disk (or a long path) put it.
  for (const where of new Set([lockPathOf(dir).path, lockPathOf(dir, true).path])) {
    if (!IS_WINDOWS && lstatSync(where, { throwIfNoEntry: false }) === undefined) continue;
    const probe = await probeLock(where);
    if (probe.state === 'live') return probe.holder ?? {};
  }
  return undefined;
}
