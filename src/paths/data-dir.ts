/**
 * Where Backchannel keeps its history, logs, worktrees and control endpoint on this machine (the
 * XDG state directory). Shared by the hub, the client and the commands that read a history.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Headless default for history and logs: `$XDG_STATE_HOME/backchannel`, else `~/.local/state/backchannel`. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME;
  return state && state.startsWith('/') ? join(state, 'backchannel') : join(homedir(), '.local', 'state', 'backchannel');
}
