/**
 * Which hub a client finds when hubs with different state directories run side by side (issue 46 §2): a hub started
 * with a state directory of its own is found only by clients that use that directory — their own `XDG_STATE_HOME`,
 * or (a host that strips the variable from `backchannel mcp`'s environment but has it) their launcher's
 * (src/paths/launcher-state.ts). Earlier, such a hub wrote `~/.local/state/backchannel/hub-elsewhere.json` and every
 * client without the variable followed it there. Real processes: two `backchannel serve` and the CLI.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, tempDir } from '../helpers/core.js';
import { anyCommandConfig } from '../helpers/run-policy.js';
import { BIN, cli, printed, start } from '../hub/control/hub-process.js';

/** A private home; `plain` has no XDG_STATE_HOME, `own` a state directory of its own. */
function environments() {
  const dir = tempDir('bc-state-home-');
  const plain: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: path.join(dir, 'home'),
    XDG_RUNTIME_DIR: '',
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    BACKCHANNEL_CONFIG: anyCommandConfig(dir),
  };
  delete plain.XDG_STATE_HOME;
  delete plain.BACKCHANNEL_CONTROL;
  return { plain, own: { ...plain, XDG_STATE_HOME: path.join(dir, 'state') } };
}

async function serve(env: NodeJS.ProcessEnv): Promise<ReturnType<typeof start>> {
  const proc = start(['serve'], env);
  await printed(proc, /Backchannel panel: (\S+)/, 'serve to print its URL');
  return proc;
}

/** `backchannel run --detach` of a quick agent: the task id, or the refusal. */
async function detach(env: NodeJS.ProcessEnv): Promise<{ code: number | string; id?: string; stderr: string; stdout: string }> {
  const run = await cli(['run', '--detach', '--json', '--', process.execPath, fixture('quick.mjs')], env);
  const id = run.code === 0 ? (JSON.parse(run.stdout) as { task_id: string }).task_id : undefined;
  return { code: run.code, id, stderr: run.stderr, stdout: run.stdout };
}

/** `backchannel <args>` started by a host that has `hostEnv` and strips XDG_STATE_HOME from its child's environment. */
function viaStrippingHost(hostEnv: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number | null; stdout: string }> {
  const host = `const env = { ...process.env }; delete env.XDG_STATE_HOME;
const r = require('node:child_process').spawnSync(process.execPath, process.argv.slice(1), { env, encoding: 'utf8' });
process.stdout.write(r.stdout ?? ''); process.stderr.write(r.stderr ?? ''); process.exit(r.status ?? 1);`;
  const child = spawn(process.execPath, ['-e', host, BIN, ...args], { env: hostEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout })));
}

describe('two hubs side by side, one with a state directory of its own', () => {
  test('each client reaches the hub of its own state directory; a plain client never reaches the other', async () => {
    const { plain, own } = environments();
    const usual = await serve(plain);
    await serve(own);
    const mine = await detach(own);
    expect(mine.code, mine.stderr).toBe(0);
    const theirs = await detach(plain);
    expect(theirs.code, theirs.stderr).toBe(0);
    const listed = async (env: NodeJS.ProcessEnv): Promise<string> => {
      const tasks = await cli(['tasks', '--json'], env);
      expect(tasks.code, tasks.stderr).toBe(0);
      return tasks.stdout;
    };
    expect(await listed(own)).toContain(mine.id);
    expect(await listed(own)).not.toContain(theirs.id);
    expect(await listed(plain)).toContain(theirs.id);
    expect(await listed(plain)).not.toContain(mine.id);

    // With the usual hub gone, a plain client finds no hub: the other one does not capture it.
    usual.child.kill('SIGTERM');
    await usual.exited;
    const alone = await detach(plain);
    expect(alone.code).not.toBe(0);
    expect(alone.stdout).toContain('no Backchannel hub is running');
  });

  test('a client whose host stripped XDG_STATE_HOME reaches the hub of the host’s state directory', async () => {
    const { own } = environments();
    await serve(own);
    const mine = await detach(own);
    expect(mine.code, mine.stderr).toBe(0);
    const listed = await viaStrippingHost(own, ['tasks', '--json']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(mine.id);
  });
});
