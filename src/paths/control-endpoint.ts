/**
 * Where the hub's control endpoint lives, for the hub and every client. Derived from the data
 * directory, never from the runtime directory: an MCP host starts `backchannel mcp` with a bare
 * environment (HOME, PATH, USER, … — no XDG_RUNTIME_DIR), and a client that looked for the hub in a
 * different place than the hub listens in became a second broker on the same history. One rule:
 *   1. `BACKCHANNEL_CONTROL` (a socket path), when set — explicit, for hub and clients alike;
 *   2. a hub given its own data directory (`serve --data-dir`) listens in it, so two hubs with two
 *      histories never collide;
 *   3. else the default data directory: `$XDG_STATE_HOME/backchannel/control.sock`, else
 *      `~/.local/state/backchannel/control.sock` (HOME, or the password database without it);
 *   4. a path past the Unix socket limit (107 bytes on Linux, 103 on macOS) becomes
 *      `~/.backchannel-control/<hash of the directory>.sock`, computed alike on both sides: a
 *      directory in the user's home, where no other user can create it first (a shared `/tmp` name
 *      could be taken by anyone, and the hub would not start); the hub makes it 0700 and refuses it
 *      when it is a symlink or not ours (./control-socket.ts). When even that path is too long,
 *      the hub and its clients stop with one line saying to give a shorter data directory or
 *      BACKCHANNEL_CONTROL.
 * On Windows a named pipe per user. Clients also ask the socket of hubs of earlier versions
 * (`$XDG_RUNTIME_DIR/backchannel/control.sock`) and, through the data directory's lock, a hub whose
 * endpoint is elsewhere (see ../client/discover.ts).
 */
import { createHash } from 'node:crypto';
import { homedir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { MAX_SOCKET_PATH_BYTES } from '../broker/transport/endpoint.js';
import { defaultDataDir } from './data-dir.js';

export const CONTROL_ENV = 'BACKCHANNEL_CONTROL';
export const CONTROL_SOCKET_NAME = 'control.sock';

/** The socket a hub listens on (with `dataDir` when it was given one), and clients look for first. */
export function controlSocketPath(env: NodeJS.ProcessEnv = process.env, dataDir?: string): string {
  const explicit = env[CONTROL_ENV];
  if (explicit) return explicit;
  if (process.platform === 'win32') return `\\\\.\\pipe\\backchannel-${userInfo().username}`;
  return endpointIn(dataDir ?? defaultDataDir(env));
}

/** The directory in the home directory that holds the short stand-ins of sockets whose path is too long. */
export const SHORT_ENDPOINT_DIR = '.backchannel-control';

/** `<dir>/control.sock`, or its short stand-in when that passes the socket path limit (throws when both do). */
export function endpointIn(dir: string): string {
  const inDir = join(dir, CONTROL_SOCKET_NAME);
  if (Buffer.byteLength(inDir) <= MAX_SOCKET_PATH_BYTES) return inDir;
  const hash = createHash('sha256').update(resolve(dir)).digest('hex').slice(0, 32);
  const short = join(homedir(), SHORT_ENDPOINT_DIR, `${hash}.sock`);
  if (Buffer.byteLength(short) <= MAX_SOCKET_PATH_BYTES) return short;
  throw new Error(
    `the control socket of ${dir} would be ${inDir}, past the ${MAX_SOCKET_PATH_BYTES}-byte limit of a Unix socket path, and so would ` +
      `its stand-in ${short}; give a shorter data directory, or set BACKCHANNEL_CONTROL to a socket path in a private directory`,
  );
}

/**
 * Where a client looks for the hub, in order: the hub's path (above), then the runtime directory
 * where hubs before this rule listened. Only the explicit path when `BACKCHANNEL_CONTROL` is set.
 */
export function controlSocketCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const first = controlSocketPath(env);
  if (env[CONTROL_ENV] || process.platform === 'win32') return [first];
  const runtime = env.XDG_RUNTIME_DIR;
  const legacy = runtime && runtime.startsWith('/') ? join(runtime, 'backchannel', CONTROL_SOCKET_NAME) : undefined;
  return legacy && legacy !== first ? [first, legacy] : [first];
}
