/**
 * Where task endpoints live and how they are named.
 *
 * Unix: a private directory (0700, owned by us) holding one socket file (0600) per attempt. The
 * directory is `$CURSOR_IPC_DIR`, else `<realpath($XDG_RUNTIME_DIR || os.tmpdir())>/backchannel-<uid>`,
 * else — when that would push socket paths past the platform limit — `/tmp/bc-<uid>`.
 * Windows: `\\.\pipe\backchannel-<random>`; pipe names are world-visible, so the per-task token is the guard.
 */
import { lstatSync, mkdirSync, readdirSync, realpathSync, chmodSync, unlinkSync } from 'node:fs';
import { createConnection } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ENV_IPC_DIR } from '../../protocol/index.js';
import { systemClock, type Clock } from '../../model/clock.js';
import { BrokerError } from '../errors.js';
import { namedPipeAddress } from './named-pipe.js';
import { NAME_CHARS } from './names.js';
import type { EndpointAddress } from './task-endpoint.js';
import { SOCKET_SUFFIX, unixSocketAddress } from './unix-socket.js';

export const IS_WINDOWS = process.platform === 'win32';

/** sun_path is 104 bytes on macOS and 108 on Linux, one kept for the terminator (Node: 103/107). */
export const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' ? 103 : 107;

/** Room a socket name needs inside the directory: "/" + name + ".sock". */
const NAME_BYTES = 1 + NAME_CHARS + SOCKET_SUFFIX.length;

function uidTag(): string {
  return typeof process.getuid === 'function' ? String(process.getuid()) : os.userInfo().username;
}

function safeRealpath(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

/** Picks the endpoint directory (does not create it). */
export function chooseEndpointDir(override?: string): string {
  const explicit = override ?? process.env[ENV_IPC_DIR];
  if (explicit) return path.resolve(explicit);
  const base = safeRealpath(process.env.XDG_RUNTIME_DIR || os.tmpdir());
  const preferred = path.join(base, `backchannel-${uidTag()}`);
  if (Buffer.byteLength(preferred) + NAME_BYTES <= MAX_SOCKET_PATH_BYTES) return preferred;
  // macOS tmpdir (/private/var/folders/…) is long: fall back to a short, still private, directory.
  return path.join('/tmp', `bc-${uidTag()}`);
}

/**
 * Creates the directory with mode 0700 or checks an existing one: a directory (not a symlink), ours,
 * and not open to group or others. Refuses rather than trusting a directory someone else prepared.
 */
export function ensurePrivateDir(dir: string): void {
  if (IS_WINDOWS) {
    mkdirSync(dir, { recursive: true });
    return;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) {
    throw new BrokerError('endpoint', `Endpoint directory ${dir} is not a directory (a symlink?). Remove it or set ${ENV_IPC_DIR}.`);
  }
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    throw new BrokerError('endpoint', `Endpoint directory ${dir} belongs to uid ${stat.uid}, not to us. Remove it or set ${ENV_IPC_DIR}.`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  if (Buffer.byteLength(dir) + NAME_BYTES > MAX_SOCKET_PATH_BYTES) {
    throw new BrokerError(
      'endpoint',
      `Endpoint directory ${dir} is too long for socket paths (${MAX_SOCKET_PATH_BYTES} bytes max). Set ${ENV_IPC_DIR} to a shorter directory.`,
    );
  }
}

/** A fresh endpoint address for one attempt: a named pipe on Windows, a socket file in `dir` elsewhere. */
export function newEndpointAddress(dir: string): EndpointAddress {
  return IS_WINDOWS ? namedPipeAddress() : unixSocketAddress(dir);
}

/** A fresh endpoint path (see newEndpointAddress). */
export function newEndpointPath(dir: string): string {
  return newEndpointAddress(dir).path;
}

/**
 * How long a refused socket gets before it is called stale. Binding creates the file and listening
 * follows in the same call, but a process preempted between the two (several brokers starting
 * together on a busy machine) has a file that refuses connections for a moment: sweeping it then
 * pulled a live broker's endpoint from under it ("chmod … ENOENT"). A crashed broker's file still
 * refuses when asked again.
 */
export const STALE_SOCKET_RECHECK_MS = 250;

/** Only a refusal means nobody listens; any other failure (EAGAIN: a full backlog) is a live broker. */
function probe(socketPath: string): Promise<'live' | 'stale'> {
  return new Promise((resolve) => {
    const socket = createConnection(socketPath);
    const done = (result: 'live' | 'stale') => {
      socket.destroy();
      resolve(result);
    };
    socket.once('connect', () => done('live'));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code === 'ECONNREFUSED' ? 'stale' : 'live'));
    socket.setTimeout(500, () => done('live'));
  });
}

/** Refused now and again after `recheckMs`. */
async function isStale(socketPath: string, recheckMs: number, clock: Clock): Promise<boolean> {
  if ((await probe(socketPath)) === 'live') return false;
  await new Promise<void>((resolve) => clock.after(recheckMs, resolve, true));
  return (await probe(socketPath)) === 'stale';
}

/**
 * Removes socket files left by a crashed broker. A socket that accepts connections belongs to a live
 * broker sharing the directory and is kept, and so is one that starts accepting within `recheckMs`
 * (see STALE_SOCKET_RECHECK_MS, timed on `clock`). Returns the removed paths.
 */
export async function sweepStaleSockets(dir: string, recheckMs = STALE_SOCKET_RECHECK_MS, clock: Clock = systemClock): Promise<string[]> {
  if (IS_WINDOWS) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  await Promise.all(
    names
      .filter((name) => name.endsWith(SOCKET_SUFFIX))
      .map(async (name) => {
        const full = path.join(dir, name);
        if (await isStale(full, recheckMs, clock)) {
          try {
            unlinkSync(full);
            removed.push(full);
          } catch {
            // Already gone: fine.
          }
        }
      }),
  );
  return removed;
}
