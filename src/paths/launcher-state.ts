/**
 * The state directory of the program that started this one, for a client whose own environment lost it. An MCP host
 * starts `backchannel mcp` with a bare environment (HOME, PATH, USER, …: the MCP SDK's default), so a user whose
 * `XDG_STATE_HOME` is set everywhere — the host included — would look for the hub in `~/.local/state` and miss the
 * one under their `XDG_STATE_HOME`. The host still has the variable: this reads it from the nearest ancestor process
 * that has it (Linux: `/proc/<pid>/environ`, only of processes of this user, at most MAX_ANCESTORS up).
 *
 * A hub is so found only by a client whose launcher uses the hub's state directory. A hub with a state directory of
 * its own (a test's, a project's) announces itself nowhere else: clients that do not use that directory never reach it
 * (the per-user `hub-elsewhere.json` of earlier versions, last writer wins, let any such hub capture them all).
 * Elsewhere than Linux nothing is read: give the MCP host's config `XDG_STATE_HOME` or `BACKCHANNEL_CONTROL`.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';

/** How many ancestors are asked: the host, and a wrapper or two it may start us through (npx, a shell). */
export const MAX_ANCESTORS = 4;

/** `XDG_STATE_HOME` of the nearest ancestor of this user's that has it, when this process has none. */
export function launcherStateHome(env: NodeJS.ProcessEnv = process.env, startPid = process.ppid): string | undefined {
  if (env.XDG_STATE_HOME || process.platform !== 'linux') return undefined;
  const uid = process.getuid?.();
  let pid = startPid;
  for (let hop = 0; hop < MAX_ANCESTORS && pid > 1; hop++) {
    if (ownerOf(pid) !== uid) return undefined;
    const state = environOf(pid)?.get('XDG_STATE_HOME');
    if (state && isAbsolute(state)) return state;
    const parent = parentOf(pid);
    if (parent === undefined) return undefined;
    pid = parent;
  }
  return undefined;
}

function ownerOf(pid: number): number | undefined {
  try {
    return statSync(`/proc/${pid}`).uid;
  } catch {
    return undefined;
  }
}

/** A process's initial environment (NUL-separated `NAME=value`), or undefined when it cannot be read. */
function environOf(pid: number): Map<string, string> | undefined {
  try {
    const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const pairs = entries.flatMap((entry): [string, string][] => {
      const eq = entry.indexOf('=');
      return eq > 0 ? [[entry.slice(0, eq), entry.slice(eq + 1)]] : [];
    });
    return new Map(pairs);
  } catch {
    return undefined;
  }
}

/** The parent's pid, from `/proc/<pid>/stat` (the field after the command name, which may hold spaces and parentheses). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const parent = Number(fields[1]);
    return Number.isInteger(parent) && parent > 0 ? parent : undefined;
  } catch {
    return undefined;
  }
}
