/**
 * The control endpoint's file-system side: a private directory (0700, ours), the socket (0600), and
 * the probe that tells a live hub from a stale socket file left by a crashed one (connect →
 * `ECONNREFUSED` → unlink). Who may connect is decided here, by the kernel: only the owner can
 * traverse a 0700 directory, so another user's `connect()` fails with `EACCES` before we see it.
 * Clients check the other direction (`untrustedEndpoint`): that whatever listens there can only be
 * the owner's own hub, before they send it a task and its input.
 */
import { chmodSync, lstatSync, mkdirSync, unlinkSync, type Stats } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { STALE_SOCKET_RECHECK_MS } from '../broker/transport/endpoint.js';
import { systemClock, type Clock } from '../model/clock.js';

/** How long a probe waits for a hub to accept; a live hub accepts at once. */
export const PROBE_TIMEOUT_MS = 1000;

/** Thrown when a hub already listens on the control endpoint. */
export class HubRunningError extends Error {
  readonly code = 'hub_running';
  constructor(readonly path: string) {
    super(`A Backchannel hub is already running (control endpoint ${path}); use it, or stop it first`);
    this.name = 'HubRunningError';
  }
}

/** Creates the endpoint's directory private to us, or refuses one that another user owns or others can enter. */
export function preparePrivateDir(socketPath: string): void {
  if (process.platform === 'win32') return;
  const dir = dirname(socketPath);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    const what = stat.isSymbolicLink()
      ? 'is a symlink'
      : !stat.isDirectory()
        ? 'is not a directory'
        : `belongs to uid ${stat.uid}, not to this user (uid ${uid})`;
    throw new Error(`The control endpoint's directory ${dir} ${what}; refusing to listen there (remove it, or set BACKCHANNEL_CONTROL)`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** A client found a control endpoint that another user could have put there; it talks to none. */
export class UntrustedEndpointError extends Error {
  readonly code = 'untrusted_endpoint';
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`refusing the hub's control endpoint ${path}: ${problem}, so another user could be the one listening there`);
    this.name = 'UntrustedEndpointError';
  }
}

/**
 * Why a client must not talk to the socket at `socketPath`, or undefined when only this user can
 * have put it there (nothing there counts as trusted: there is nobody to talk to). The rule `serve`
 * keeps for its own endpoint: the directory is a real directory, ours, that no one else can write
 * (so no one else can replace the socket), and the socket is ours. Symlinks are not followed.
 */
export function untrustedEndpoint(socketPath: string): string | undefined {
  const uid = process.getuid?.();
  if (process.platform === 'win32' || uid === undefined) return undefined;
  let socket: Stats;
  try {
    socket = lstatSync(socketPath);
  } catch {
    return undefined;
  }
  const dir = dirname(socketPath);
  const parent = lstatSync(dir, { throwIfNoEntry: false });
  if (!parent?.isDirectory()) return `its directory ${dir} is not a directory (a symlink?)`;
  if (parent.uid !== uid) return `its directory ${dir} belongs to uid ${parent.uid}, not to this user (uid ${uid})`;
  if ((parent.mode & 0o022) !== 0) return `its directory ${dir} is writable by others (mode ${modeOf(parent)})`;
  if (!socket.isSocket()) return `it is not a socket (a ${socket.isSymbolicLink() ? 'symlink' : 'file'})`;
  if (socket.uid !== uid) return `the socket belongs to uid ${socket.uid}, not to this user (uid ${uid})`;
  return undefined;
}

function modeOf(stat: Stats): string {
  return (stat.mode & 0o7777).toString(8).padStart(4, '0');
}

/** `live`: a hub accepts connections there. `stale`: a socket file nobody listens on. `none`: nothing there. */
export async function probeEndpoint(socketPath: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<'live' | 'stale' | 'none'> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const done = (result: 'live' | 'stale' | 'none'): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    // A hub so busy it cannot accept within a second is still a hub: never remove its socket.
    const timer = setTimeout(() => done('live'), timeoutMs);
    socket.once('connect', () => done('live'));
    // EAGAIN: a hub whose accept queue is full, still a hub.
    socket.once('error', (error: NodeJS.ErrnoException) =>
      done(error.code === 'ENOENT' ? 'none' : error.code === 'EAGAIN' ? 'live' : 'stale'),
    );
  });
}

/**
 * Removes a stale socket file; throws `HubRunningError` when a hub answers there. Returns true when it
 * removed one. A refusal is asked again after STALE_SOCKET_RECHECK_MS: a hub starting this very moment
 * has bound its socket but may not listen yet, and must not lose it to a second hub.
 */
export async function claimEndpoint(socketPath: string, recheckMs = STALE_SOCKET_RECHECK_MS, clock: Clock = systemClock): Promise<boolean> {
  let state = await probeEndpoint(socketPath);
  if (state === 'stale') {
    await new Promise<void>((resolve) => clock.after(recheckMs, resolve, true));
    state = await probeEndpoint(socketPath);
  }
  if (state === 'live') throw new HubRunningError(socketPath);
  if (state === 'none' || process.platform === 'win32') return false;
  unlinkSync(socketPath);
  return true;
}
