/**
 * Isolated scratch workspaces, one per gateway session (`session_workspaces: true`): a directory
 * `<root>/<session key>` made for the session's first request and deleted when the session is
 * released. An hourly sweep removes leftovers of crashed gateways older than 24 h.
 *
 * Only direct children of the root whose names are 32-hex session keys are ever deleted: a
 * user-given working directory, or anything else put under the root, never is.
 */
import { lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

/** A session key: what this module names directories, and the only names it deletes. */
const SESSION_DIR = /^[0-9a-f]{32}$/;
/** Leftovers younger than this may belong to another running gateway. */
export const WORKSPACE_MAX_AGE_MS = 24 * 60 * 60_000;
export const WORKSPACE_SWEEP_EVERY_MS = 60 * 60_000;

export class Workspaces {
  private readonly timer: NodeJS.Timeout;

  constructor(readonly root: string) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    this.sweep();
    this.timer = setInterval(() => this.sweep(), WORKSPACE_SWEEP_EVERY_MS).unref();
  }

  /** The session's directory, made if missing. */
  forSession(key: string): string {
    const dir = this.pathOf(key);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  release(key: string): void {
    rmSync(this.pathOf(key), { recursive: true, force: true });
  }

  /** Removes session directories not modified for `maxAgeMs`; returns their names. */
  sweep(maxAgeMs = WORKSPACE_MAX_AGE_MS, now = Date.now()): string[] {
    const removed: string[] = [];
    for (const name of readdirSync(this.root)) {
      if (!SESSION_DIR.test(name)) continue;
      const stat = lstatSync(path.join(this.root, name));
      if (!stat.isDirectory() || now - stat.mtimeMs < maxAgeMs) continue;
      this.release(name);
      removed.push(name);
    }
    return removed;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private pathOf(key: string): string {
    if (!SESSION_DIR.test(key)) throw new Error(`not a session key: ${key}`);
    return path.join(this.root, key);
  }
}
