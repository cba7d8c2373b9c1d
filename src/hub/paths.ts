import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Headless default for history and logs: `$XDG_STATE_HOME/backchannel`, else `~/.local/state/backchannel`. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME;
  return state && state.startsWith('/') ? join(state, 'backchannel') : join(homedir(), '.local', 'state', 'backchannel');
}

/** The built panel (dist/renderer), next to this file's dist/hub. */
export function defaultRendererDir(): string {
  return fileURLToPath(new URL('../renderer/', import.meta.url));
}
