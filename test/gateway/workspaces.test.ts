/**
 * Session workspaces another local user prepared (src/gateway/workspaces.ts), tried from outside: a
 * `workspaces_dir` not of our own stops the gateway with one line; a link planted where a workspace
 * used to be named never becomes an agent's working directory.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir, waitFor } from '../helpers/core.js';
import { raw, standinModels, startTestGateway } from './helpers.js';

const NOBODY = 65534;

/** `backchannel gateway --config <file>` until its banner or its exit: exit code and stderr. */
async function gatewayWith(dir: string, workspacesDir: string) {
  const file = path.join(dir, 'gw.yaml');
  fs.writeFileSync(file, `session_workspaces: true\nworkspaces_dir: ${workspacesDir}\nmodels: ${JSON.stringify(standinModels(dir))}\n`);
  const env = {
    ...process.env,
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    BACKCHANNEL_CONTROL: path.join(dir, 'no-hub.sock'),
  };
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), 'gateway', '--port', '0', '--config', file], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await waitFor(() => out.includes('Press Ctrl+C') || child.exitCode !== null, 'the gateway to start or fail', 30_000);
  child.kill('SIGINT');
  return { code: await exited, out, err };
}

/** Ways another user prepares a workspaces_dir for us. */
const FOREIGN_ROOTS: Array<[string, (dir: string) => string, RegExp]> = [
  [
    'writable by everyone',
    (dir) => {
      const ws = path.join(dir, 'shared');
      fs.mkdirSync(ws);
      fs.chmodSync(ws, 0o1777);
      return ws;
    },
    /shared is writable by everyone/,
  ],
  [
    'owned by nobody',
    (dir) => {
      const ws = path.join(dir, 'theirs');
      fs.mkdirSync(ws, { mode: 0o700 });
      fs.chownSync(ws, NOBODY, NOBODY);
      return ws;
    },
    /theirs belongs to uid 65534/,
  ],
  [
    "a symlink of nobody's to a directory",
    (dir) => {
      const target = path.join(dir, 'target');
      fs.mkdirSync(target, { mode: 0o700 });
      const link = path.join(dir, 'link');
      fs.symlinkSync(target, link);
      fs.lchownSync(link, NOBODY, NOBODY);
      return link;
    },
    /link is not a directory \(a symlink\?\)/,
  ],
];

describe('session workspaces', () => {
  test.each(FOREIGN_ROOTS)('a workspaces_dir %s stops the gateway, saying why in one line', async (_, prepare, why) => {
    const dir = tempDir('bc-gwws-');
    const run = await gatewayWith(dir, prepare(dir));
    expect(run.code).toBe(1);
    expect(run.err).toMatch(why);
    expect(run.err).toContain('agents only run in a directory of your own');
    expect(run.err.trim().split('\n')).toHaveLength(1);
    expect(run.out).not.toContain('Backchannel gateway:');
  });

  test("a link planted at a session's predictable name is never an agent's working directory; the workspace's name is random", async () => {
    const dir = tempDir('bc-gwws-');
    const root = path.join(dir, 'ws');
    fs.mkdirSync(root, { mode: 0o700 });
    const theirs = path.join(dir, 'theirs');
    fs.mkdirSync(theirs);
    fs.writeFileSync(path.join(theirs, 'keep'), 'nobody’s file');
    fs.chownSync(theirs, NOBODY, NOBODY);
    const text = 'What is in README.md?';
    // Where this conversation's workspace was named before: the session key, a hash of its first words.
    const predictable = createHash('sha256').update(`main\0inputs\0${text}`).digest('hex').slice(0, 32);
    fs.symlinkSync(theirs, path.join(root, predictable));
    fs.lchownSync(path.join(root, predictable), NOBODY, NOBODY);

    const gw = await startTestGateway({ models: standinModels(dir), session_workspaces: true, workspaces_dir: root }, { dir });
    const res = await raw(`${gw.baseURL}/chat/completions`, { model: 'inputs', messages: [{ role: 'user', content: text }] });
    expect(res.status).toBe(200);
    const cwd: string = JSON.parse(res.json.choices[0].message.content).cwd;
    expect(path.dirname(cwd)).toBe(root);
    expect(fs.lstatSync(cwd).isDirectory()).toBe(true);
    expect(fs.realpathSync(cwd)).not.toBe(fs.realpathSync(theirs));
    expect(path.basename(cwd)).not.toBe(predictable);
    expect(path.basename(cwd)).not.toBe((await gw.client.listTasks())[0]!.tags?.session);
    await gw.close();
    expect(fs.existsSync(cwd)).toBe(false);
    expect(fs.readFileSync(path.join(theirs, 'keep'), 'utf8')).toBe('nobody’s file'); // the link was neither followed nor emptied
  });
});
