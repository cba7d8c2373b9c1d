/**
 * Issue 23 item 3, tried as the attacker would: another user (`nobody`) runs a fake hub at the path
 * where a client looks for the control endpoint. Every client checks the socket and its directory
 * before connecting (ours, not writable by others, as `serve` keeps its own) and refuses with one
 * line saying why; the fake hub never receives a request. A positive control shows the same fake hub
 * in a trusted place does receive the client's task.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, tempDir, waitFor } from '../helpers/core.js';
import { cli } from '../hub/control/hub-process.js';

const NOBODY = 65534;
const cannotSwitch = spawnSync('setpriv', ['--version']).error
  ? 'setpriv is not installed'
  : process.getuid?.() !== 0
    ? 'acting as nobody needs root'
    : undefined;

interface FakeHub {
  child: ChildProcess;
  requests(): string[];
}

const fakes: ChildProcess[] = [];
afterEach(() => {
  for (const child of fakes.splice(0)) if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
});

/** The fake hub listening at `socket`, as nobody (or as us); resolves once it listens. */
async function fakeHub(socket: string, asNobody: boolean): Promise<FakeHub> {
  const node = [process.execPath, asNobody ? readableByAll(fixture('round3/fake-hub.mjs')) : fixture('round3/fake-hub.mjs'), socket];
  const child = asNobody
    ? spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...node], { cwd: '/' })
    : spawn(node[0]!, node.slice(1), { cwd: '/' });
  fakes.push(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  await waitFor(() => out.includes('listening') || child.exitCode !== null, 'the fake hub to listen', 20_000, 25);
  expect(out).toContain('listening');
  return { child, requests: () => out.split('\n').filter((line) => line.startsWith('request ')) };
}

/**
 * A copy of `file` that nobody can read too, in a directory the test makes: the clone's own directories
 * may be closed to other users (a clone under root's 0700 home).
 */
function readableByAll(file: string): string {
  const dir = tempDir('bc-for-nobody-');
  chmodSync(dir, 0o755);
  const copy = path.join(dir, path.basename(file));
  copyFileSync(file, copy);
  chmodSync(copy, 0o644);
  return copy;
}

function clientEnv(dir: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_RUNTIME_DIR: '',
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    ...extra,
  };
  if (!('BACKCHANNEL_CONTROL' in extra)) delete env.BACKCHANNEL_CONTROL;
  return env;
}

/** A test directory nobody can enter, holding `name` with `mode` (chmod: the umask would narrow it). */
function openDirs(name: string, mode: number): { dir: string; shared: string } {
  const dir = tempDir('bc-untrusted-');
  chmodSync(dir, 0o755);
  const shared = path.join(dir, name);
  mkdirSync(shared);
  chmodSync(shared, mode);
  return { dir, shared };
}

const SECRET_RUN = ['run', '--input', '{"secret":"hunter2"}', '--', process.execPath, fixture('quick.mjs')];

describe.skipIf(cannotSwitch)(
  `a control socket another user could have put there${cannotSwitch ? ` (skipped: ${cannotSwitch})` : ''}`,
  () => {
    test('in a directory others can write (0777): run, tasks and mcp refuse it with one line; the fake hub gets nothing', async () => {
      const { dir, shared } = openDirs('shared', 0o777);
      const socket = path.join(shared, 'control.sock');
      const fake = await fakeHub(socket, true);
      const env = clientEnv(dir, { BACKCHANNEL_CONTROL: socket });
      const refusal = `refusing the hub's control endpoint ${socket}: its directory ${shared} is writable by others (mode 0777), so another user could be the one listening there`;

      const run = await cli(SECRET_RUN, env);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: `backchannel run: ${refusal}\n` });
      const tasks = await cli(['tasks'], env);
      expect({ code: tasks.code, stderr: tasks.stderr }).toEqual({ code: 1, stderr: `backchannel tasks: ${refusal}\n` });
      const mcp = await cli(['mcp'], env);
      expect({ code: mcp.code, stderr: mcp.stderr }).toEqual({ code: 1, stderr: `backchannel mcp: ${refusal}\n` });
      expect(fake.requests()).toEqual([]);
    });

    test('in XDG_RUNTIME_DIR shared with another user, who made backchannel/control.sock there: refused, naming the owner', async () => {
      const { dir, shared: runtime } = openDirs('runtime', 0o1777);
      const theirs = path.join(runtime, 'backchannel');
      mkdirSync(theirs, { mode: 0o755 });
      chownSync(theirs, NOBODY, NOBODY);
      const socket = path.join(theirs, 'control.sock');
      const fake = await fakeHub(socket, true);
      const run = await cli(SECRET_RUN, clientEnv(dir, { XDG_RUNTIME_DIR: runtime }));
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `backchannel run: refusing the hub's control endpoint ${socket}: its directory ${theirs} belongs to uid ${NOBODY}, not to this user (uid 0), so another user could be the one listening there\n`,
      );
      expect(fake.requests()).toEqual([]);
    });

    test('a socket owned by another user in our own private directory is refused; the same fake hub, ours, gets the task', async () => {
      const dir = tempDir('bc-untrusted-');
      const own = path.join(dir, 'own');
      mkdirSync(own, { mode: 0o700 });
      const socket = path.join(own, 'control.sock');
      const fake = await fakeHub(socket, false);
      const env = clientEnv(dir, { BACKCHANNEL_CONTROL: socket });
      chownSync(socket, NOBODY, NOBODY);
      const refused = await cli(SECRET_RUN, env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /^backchannel run: refusing the hub's control endpoint .*: the socket belongs to uid 65534, not to this user \(uid 0\)/,
      );
      expect(fake.requests()).toEqual([]);

      // Positive control: the same socket, ours again, is a hub the client talks to.
      chownSync(socket, 0, 0);
      await cli(SECRET_RUN, env);
      expect(fake.requests().length).toBeGreaterThan(0);
    });
  },
);
