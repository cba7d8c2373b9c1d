/**
 * Where the hub's control endpoint lives, for the hub and every client. One rule, in this order:
 *   1. `BACKCHANNEL_CONTROL` (a socket path) — tests and unusual set-ups;
 *   2. a hub given its own data directory (`serve --data-dir`) listens in it, so two hubs with two
 *      histories never collide;
 *   3. `$XDG_RUNTIME_DIR/backchannel/control.sock` — private, per user, cleared at logout;
 *   4. else the state directory (`~/.local/state/backchannel/control.sock`).
 * On Windows a named pipe per user.
 */
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { defaultDataDir } from '../paths.js';

export const CONTROL_ENV = 'BACKCHANNEL_CONTROL';
export const CONTROL_SOCKET_NAME = 'control.sock';

export function controlSocketPath(env: NodeJS.ProcessEnv = process.env, dataDir?: string): string {
  const explicit = env[CONTROL_ENV];
  if (explicit) return explicit;
  if (process.platform === 'win32') return `\\\\.\\pipe\\backchannel-${userInfo().username}`;
  if (dataDir) return join(dataDir, CONTROL_SOCKET_NAME);
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && runtime.startsWith('/')) return join(runtime, 'backchannel', CONTROL_SOCKET_NAME);
  return join(defaultDataDir(env), CONTROL_SOCKET_NAME);
}
