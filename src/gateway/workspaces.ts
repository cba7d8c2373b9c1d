/**
 * Isolated scratch workspaces, one per gateway session (`session_workspaces: true`): a directory
 * `<root>/<random 32 hex>` made for the session's first request and deleted when the session is
 * released. An hourly sweep removes leftovers of crashed gateways older than 24 h.
 *
 * Another local user must not choose where our agents run:
 * - the root gets the data directory's rules: a directory (not a symlink), ours, not writable by
 *   group or others — else the gateway does not start, saying why;
 * - a workspace's name is random, never derived from the session (a client's session id is no
 *   secret), and it is made with `mkdir`, which never follows a link planted at its name and fails
 *   on a name already taken;
 * - a workspace is used again, and deleted, only while it is still the directory made (same device
 *   and inode, a directory, ours).
 *
 * Only direct children of the root with 32-hex names are ever deleted by the sweep: a user-given
 * working directory, or anything else put under the root, never is.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, rmSync, type Stats } from 'node:fs';
import path from 'node:path';

/** What this module names workspaces, and the only names its sweep deletes. */
const WORKSPACE_NAME = /^[0-9a-f]{32}$/;
/** Leftovers younger than this may belong to another running gateway. */
export const WORKSPACE_MAX_AGE_MS = 24 * 60 * 60_000;
export const WORKSPACE_SWEEP_EVERY_MS = 60 * 60_000;

export class WorkspaceError extends Error {
  override readonly name = 'WorkspaceError';
}

interface Made {
  dir: string;
  dev: number;
  ino: number;
}

export class Workspaces {
  private readonly timer: NodeJS.Timeout;
  /** Session key → the workspace made for it. */
  private readonly made = new Map<string, Made>();

  constructor(readonly root: string) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const why = notOurs(lstatSync(root));
    if (why !== undefined)
      throw new WorkspaceError(`workspaces_dir ${root} ${why}; agents only run in a directory of your own. Fix it or choose another.`);
    this.sweep();
    this.timer = setInterval(() => this.sweep(), WORKSPACE_SWEEP_EVERY_MS).unref();
  }

  /** The session's workspace, made (under a new random name) if it has none yet. */
  forSession(key: string): string {
    const known = this.made.get(key);
    if (known) {
      if (this.stillMade(known)) return known.dir;
      throw new WorkspaceError(`the workspace ${known.dir} was replaced or changed owner; refusing to run an agent there`);
    }
    const dir = path.join(this.root, randomBytes(16).toString('hex'));
    mkdirSync(dir, { mode: 0o700 }); // not recursive: a taken name (or a planted link) is EEXIST
    const stat = lstatSync(dir);
    this.made.set(key, { dir, dev: stat.dev, ino: stat.ino });
    return dir;
  }

  release(key: string): void {
    const known = this.made.get(key);
    if (!known) return;
    this.made.delete(key);
    if (this.stillMade(known)) rmSync(known.dir, { recursive: true, force: true });
  }

  /** Removes workspaces no session holds and not modified for `maxAgeMs`; returns their names. */
  sweep(maxAgeMs = WORKSPACE_MAX_AGE_MS, now = Date.now()): string[] {
    const inUse = new Set([...this.made.values()].map((m) => path.basename(m.dir)));
    const removed: string[] = [];
    for (const name of readdirSync(this.root)) {
      if (!WORKSPACE_NAME.test(name) || inUse.has(name)) continue;
      const stat = lstatSync(path.join(this.root, name));
      if (notOurs(stat) !== undefined || now - stat.mtimeMs < maxAgeMs) continue;
      rmSync(path.join(this.root, name), { recursive: true, force: true });
      removed.push(name);
    }
    return removed;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private stillMade(made: Made): boolean {
    try {
      const stat = lstatSync(made.dir);
      return notOurs(stat) === undefined && stat.dev === made.dev && stat.ino === made.ino;
    } catch {
      return false;
    }
  }
}

/** Why a directory is not one of our own (undefined: it is), in words for an error message. */
function notOurs(stat: Stats): string | undefined {
  if (!stat.isDirectory()) return 'is not a directory (a symlink?)';
  if (process.platform === 'win32') return undefined;
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return `belongs to uid ${stat.uid}, not to us`;
  if ((stat.mode & 0o022) !== 0)
    return `is writable by ${stat.mode & 0o002 ? 'everyone' : 'its group'} (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}
