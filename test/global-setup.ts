/**
 * Keeps `npm test` off the user's own Backchannel: without this, a test that starts `serve` or runs
 * the CLI would find (or start) a hub at the user's well-known control endpoint, read and write the
 * user's history, config file and gateway key. Every test process and every child it spawns sees a
 * run-private state and config directory and no runtime directory; tests that want a hub or a
 * config still set their own (BACKCHANNEL_CONTROL, XDG_STATE_HOME, --data-dir, …).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const home = mkdtempSync(path.join(os.tmpdir(), 'bc-test-home-'));
  process.env.XDG_STATE_HOME = path.join(home, 'state');
  process.env.XDG_CONFIG_HOME = path.join(home, 'config');
  process.env.XDG_RUNTIME_DIR = '';
  delete process.env.BACKCHANNEL_CONTROL;
  return () => rmSync(home, { recursive: true, force: true });
}
