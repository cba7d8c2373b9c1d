/**
 * The panel's token. New on every start by default; a stable one on request, so a bookmarked panel
 * URL keeps working across restarts: `BACKCHANNEL_PANEL_TOKEN` from the environment, or (`keep`) the
 * token kept in `<dataDir>/panel-token`, a file only the user can read (0600), created on first use.
 */
import { closeSync, constants, fchmodSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { NO_FOLLOW } from '../../broker/history/data-dir.js';
import { join } from 'node:path';
import { newToken } from '../../loopback/security.js';

export const TOKEN_ENV = 'BACKCHANNEL_PANEL_TOKEN';
export const TOKEN_FILE = 'panel-token';
/** Long enough that guessing is hopeless (newToken gives 64 hex characters). */
const MIN_TOKEN_LENGTH = 32;

export class PanelTokenError extends Error {
  override readonly name = 'PanelTokenError';
}

export function panelToken(options: { dataDir: string; keep?: boolean; env?: NodeJS.ProcessEnv }): string {
  const fromEnv = (options.env ?? process.env)[TOKEN_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return checked(fromEnv, TOKEN_ENV);
  if (!options.keep) return newToken();
  const file = join(options.dataDir, TOKEN_FILE);
  const kept = readKept(file);
  if (kept) return checked(kept, file);
  const token = newToken();
  // O_EXCL: a symlink planted meanwhile is not followed either.
  writeFileSync(file, token + '\n', { mode: 0o600, flag: 'wx' });
  return token;
}

/**
 * The kept token, or undefined when there is none yet. Never through a symlink (whoever planted it
 * would choose the token of our panel, or make us chmod their file), and only from a regular file of
 * ours: the directory check does not stop a file another user placed before it was made private.
 */
function readKept(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new PanelTokenError(`${file} is a symlink; remove it (the panel token is never read through one)`);
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    const uid = process.getuid?.();
    if (!stat.isFile()) throw new PanelTokenError(`${file} is not a regular file; remove it`);
    if (uid !== undefined && stat.uid !== uid) {
      throw new PanelTokenError(`${file} belongs to uid ${stat.uid}, not to this user (uid ${uid}); remove it`);
    }
    // Whatever the umask made of it earlier, the token stays private.
    if (process.platform !== 'win32') fchmodSync(fd, 0o600);
    return readFileSync(fd, 'utf8').trim() || undefined;
  } finally {
    closeSync(fd);
  }
}

function checked(token: string, source: string): string {
  if (token.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new PanelTokenError(`the panel token from ${source} must be at least ${MIN_TOKEN_LENGTH} printable characters without spaces`);
  }
  return token;
}
