/**
 * Where a hub whose state lives elsewhere can still be found by a client whose environment lost the
 * way there. A hub started with `XDG_STATE_HOME` set keeps its data (and its control socket) under
 * it; an MCP host that starts `backchannel mcp` with `XDG_STATE_HOME` stripped made that client look
 * in `~/.local/state/backchannel`, find nothing, and become a second hub. So such a hub also writes
 * `~/.local/state/backchannel/hub-elsewhere.json` (`{"control": <its socket>}`), and a client with
 * no `XDG_STATE_HOME` that finds no hub reads it.
 *
 * Trusted only as the data directory is: the directory is ours, 0700 and no symlink (created so,
 * else checked), the file is ours, a regular file opened without following a symlink, written new
 * and renamed into place. The socket it names is then checked like every other (untrustedEndpoint).
 * The hub removes the file when it stops, if it still names its socket.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir, NO_FOLLOW } from '../../broker/history/data-dir.js';
import { defaultDataDir } from '../../paths/data-dir.js';

export const HOME_POINTER_FILE = 'hub-elsewhere.json';

/** `~/.local/state/backchannel` (the default data directory of an environment without XDG_STATE_HOME). */
function homeStateDir(): string {
  return defaultDataDir({});
}

/** Whether a hub with this data directory is one a stripped environment would not find. */
export function needsHomePointer(dataDir: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return process.platform !== 'win32' && Boolean(env.XDG_STATE_HOME) && dataDir === defaultDataDir(env) && dataDir !== homeStateDir();
}

/** Writes the pointer to `control`; a failure is the caller's to log (the hub runs on without it). */
export function writeHomePointer(control: string): void {
  const dir = homeStateDir();
  ensureDataDir(dir, 'State directory');
  const temp = join(dir, `.${HOME_POINTER_FILE}.${randomBytes(6).toString('hex')}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, 0o600);
  try {
    const data = Buffer.from(JSON.stringify({ control }) + '\n');
    for (let offset = 0; offset < data.length;) offset += writeSync(fd, data, offset, data.length - offset);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, join(dir, HOME_POINTER_FILE));
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** The control socket the pointer names, when it is ours and well formed. */
export function readHomePointer(): string | undefined {
  if (process.platform === 'win32') return undefined;
  const dir = homeStateDir();
  const uid = process.getuid?.();
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o022) !== 0) return undefined;
  } catch {
    return undefined;
  }
  let fd: number | undefined;
  try {
    fd = openSync(join(dir, HOME_POINTER_FILE), constants.O_RDONLY | NO_FOLLOW);
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.uid !== uid || stat.size > 64 * 1024) return undefined;
    const { control } = JSON.parse(readFileSync(fd, 'utf8')) as { control?: unknown };
    return typeof control === 'string' && control.startsWith('/') ? control : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Removes the pointer when it still names `control` (another hub may have written its own since). */
export function removeHomePointer(control: string): void {
  if (readHomePointer() !== control) return;
  try {
    unlinkSync(join(homeStateDir(), HOME_POINTER_FILE));
  } catch {
    // Gone already.
  }
}
