/**
 * The panel's token. New on every start by default; a stable one on request, so a bookmarked panel
 * URL keeps working across restarts: `BACKCHANNEL_PANEL_TOKEN` from the environment, or (`keep`) the
 * token kept in `<dataDir>/panel-token`, a file only the user can read (0600), created on first use.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newToken } from '../http/security.js';

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
  let kept: string | undefined;
  try {
    kept = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (kept) {
    // Whatever the umask made of it earlier, the token stays private.
    chmodSync(file, 0o600);
    return checked(kept, file);
  }
  const token = newToken();
  writeFileSync(file, token + '\n', { mode: 0o600, flag: 'wx' });
  return token;
}

function checked(token: string, source: string): string {
  if (token.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new PanelTokenError(`the panel token from ${source} must be at least ${MIN_TOKEN_LENGTH} printable characters without spaces`);
  }
  return token;
}
