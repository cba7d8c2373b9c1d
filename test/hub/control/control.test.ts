/**
 * The control endpoint: the bridge over a private Unix socket. A hub client in this process drives a
 * real headless hub; stale endpoints are removed, a second hub is refused, and another user cannot
 * connect (checked with a real process running as `nobody`).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { BridgeEvent, TaskFeedEvent } from '../../../src/bridge/contract.js';
import { connectHub, HubLostError } from '../../../src/client/hub-client.js';
import { HubRunningError, startControlServer } from '../../../src/hub/control/server.js';
import { claimEndpoint, probeEndpoint } from '../../../src/paths/control-socket.js';
import { controlSocketCandidates, controlSocketPath } from '../../../src/paths/control-endpoint.js';
import { fixture, tempDir, waitFor } from '../../helpers/core.js';
import { leaveStaleSocket } from '../../helpers/processes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { startTestHeadless, type TestHeadless } from '../../helpers/panel.js';

let headless: TestHeadless | undefined;
afterEach(async () => {
  await headless?.stop();
  headless = undefined;
});

const sha32 = (dir: string) => createHash('sha256').update(dir).digest('hex').slice(0, 32);

async function hubIn(dir: string): Promise<TestHeadless> {
  headless = await startTestHeadless({ dir, control: path.join(dir, 'run', 'control.sock') });
  return headless;
}

describe('control endpoint', () => {
  test('listens in a private directory (0700) on a socket only its owner may open (0600)', async () => {
    const dir = tempDir();
    await hubIn(dir);
    expect(fs.statSync(path.join(dir, 'run')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'run', 'control.sock')).mode & 0o777).toBe(0o600);
  });

  test('a hub client submits a task, sees it in the event stream and gets its result and log', async () => {
    const dir = tempDir();
    await hubIn(dir);
    const hub = connectHub(path.join(dir, 'run', 'control.sock'));
    try {
      expect((await hub.info()).mode).toBe('headless');
      const events: BridgeEvent[] = [];
      const unsubscribe = hub.subscribe((event) => events.push(event));
      const { id } = await hub.submit({ command: fixture('sdk-progress.mjs'), input: { n: 7 }, label: 'over the socket' });
      await waitFor(() => events.some((e) => e.tasks.some((t) => t.id === id && t.state === 'succeeded')), 'the task to succeed');
      unsubscribe();
      expect(events[0]?.full).toBe(true);
      const { task } = await hub.getTask(id);
      expect(task.result?.data).toEqual({ echo: { n: 7 }, attempt: 1 });
      await expect(hub.cancel(id)).rejects.toMatchObject({ code: 'conflict' });
      await expect(hub.getTask('nope')).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      hub.close();
    }
  });

  test('submitAndFollow: every update of a task arrives in order, not coalesced; env and tags reach it; a refusal rejects the id', async () => {
    const dir = tempDir();
    await hubIn(dir);
    const hub = connectHub(path.join(dir, 'run', 'control.sock'));
    try {
      const events: TaskFeedEvent[] = [];
      const followed = hub.submitAndFollow(
        { command: fixture('chatty-env.mjs'), input: { n: 500 }, env: { CHATTY_VALUE: 'from the request' }, tags: { source: 'test' } },
        (event) => events.push(event),
      );
      const id = await followed.id;
      await followed.ended;
      expect(events[0]).toEqual({ task: expect.objectContaining({ id }) });
      expect(events.slice(1).every((e) => e.update?.taskId === id && e.task.id === id)).toBe(true);
      const partials = events.filter((e) => e.update?.kind === 'partial').map((e) => (e.update!.payload!.data as { i: number }).i);
      expect(partials).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
      const ended = events.find((e) => e.update?.kind === 'ended')!;
      expect(ended.task).toMatchObject({ state: 'succeeded', tags: { source: 'test' }, result: { data: { value: 'from the request' } } });
      expect(events.at(-1)!.update!.kind).toBe('exited');

      const refused = hub.submitAndFollow({ command: '' }, () => {});
      await expect(refused.id).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(hub.submit({ command: 'x', env: { 'BAD NAME': 'v' } })).rejects.toThrow(/names in `env` to be like FOO_BAR/);
    } finally {
      hub.close();
    }
  });

  test('submitAndFollow: a front-end that goes away before its task ended has it cancelled, with a reason', async () => {
    const dir = tempDir();
    await hubIn(dir);
    const hub = connectHub(path.join(dir, 'run', 'control.sock'));
    try {
      let running = false;
      const followed = hub.submitAndFollow({ command: fixture('chatty-env.mjs'), input: { n: 1, hold: true } }, (event) => {
        if (event.update?.kind === 'partial') running = true;
      });
      const id = await followed.id;
      await waitFor(() => running, 'the task to run');
      followed.close();
      await expect(followed.ended).rejects.toBeDefined();
      await waitFor(async () => (await hub.getTask(id)).task.state === 'cancelled', 'the hub to cancel it');
      expect((await hub.getTask(id)).task.message).toContain('the front-end that started it went away');
    } finally {
      hub.close();
    }
  });

  test('a client of a hub that stops hears it once (onLost) and its calls fail with HubLostError', async () => {
    const dir = tempDir();
    const running = await hubIn(dir);
    const hub = connectHub(path.join(dir, 'run', 'control.sock'));
    const lost: Error[] = [];
    hub.onLost((error) => lost.push(error));
    hub.subscribe(() => {});
    await hub.listTasks();
    await running.stop();
    headless = undefined;
    await waitFor(() => lost.length > 0, 'the client to notice');
    expect(lost[0]).toBeInstanceOf(HubLostError);
    await expect(hub.listTasks()).rejects.toThrow(/Backchannel hub \(control endpoint .*\) is gone/);
    hub.close();
  });

  test('a second hub on the same endpoint is refused with a clear message', async () => {
    const dir = tempDir();
    const running = await hubIn(dir);
    await expect(startControlServer({ bridge: running.bridge, path: path.join(dir, 'run', 'control.sock') })).rejects.toThrow(
      HubRunningError,
    );
    expect(await probeEndpoint(path.join(dir, 'run', 'control.sock'))).toBe('live');
  });

  test('a stale socket left by a killed hub is removed at the next start', async () => {
    const dir = tempDir();
    const socket = path.join(dir, 'run', 'control.sock');
    fs.mkdirSync(path.dirname(socket), { mode: 0o700 });
    await leaveStaleSocket(socket);
    expect(fs.existsSync(socket)).toBe(true);
    expect(await probeEndpoint(socket)).toBe('stale');
    await hubIn(dir);
    expect(await probeEndpoint(socket)).toBe('live');
  });

  test('a hub starting at the same moment (bound, not yet listening) is not taken over by a second one', async () => {
    const dir = tempDir();
    const socket = path.join(dir, 'run', 'control.sock');
    fs.mkdirSync(path.dirname(socket), { mode: 0o700 });
    await leaveStaleSocket(socket);
    // The second hub finds the socket refusing; the first listens before it asks again (1 s later, on a fake clock).
    const clock = new FakeClock();
    const claiming = claimEndpoint(socket, 1000, clock);
    await waitFor(() => clock.pending === 1, 'the second hub to find the socket refusing');
    fs.unlinkSync(socket);
    const first = net.createServer();
    await new Promise<void>((resolve) => first.listen(socket, resolve));
    clock.advance(1000);
    try {
      await expect(claiming).rejects.toThrow(HubRunningError);
      expect(await probeEndpoint(socket)).toBe('live');
    } finally {
      first.close();
    }
  });

  test('the path: BACKCHANNEL_CONTROL, else a given data dir, else the default data dir (XDG_STATE_HOME, else HOME) — never the runtime directory; a path past the socket limit becomes a short one in ~/.backchannel-control; clients also ask the old runtime-directory path', () => {
    const home = os.homedir();
    expect(controlSocketPath({ BACKCHANNEL_CONTROL: '/x/c.sock' }, '/data')).toBe('/x/c.sock');
    expect(controlSocketPath({ XDG_RUNTIME_DIR: '/run/user/7' }, '/data')).toBe('/data/control.sock');
    expect(controlSocketPath({ XDG_RUNTIME_DIR: '/run/user/7' })).toBe(path.join(home, '.local/state/backchannel/control.sock'));
    expect(controlSocketPath({})).toBe(path.join(home, '.local/state/backchannel/control.sock'));
    expect(controlSocketPath({ XDG_STATE_HOME: '/st' })).toBe('/st/backchannel/control.sock');
    const deep = '/' + 'd'.repeat(120);
    expect(controlSocketPath({}, deep)).toBe(path.join(home, '.backchannel-control', `${sha32(deep)}.sock`));
    expect(Buffer.byteLength(controlSocketPath({}, deep))).toBeLessThanOrEqual(103);
    expect(controlSocketCandidates({ XDG_STATE_HOME: '/st', XDG_RUNTIME_DIR: '/run/user/7' })).toEqual([
      '/st/backchannel/control.sock',
      '/run/user/7/backchannel/control.sock',
    ]);
    expect(controlSocketCandidates({ XDG_STATE_HOME: '/st' })).toEqual(['/st/backchannel/control.sock']);
    expect(controlSocketCandidates({ BACKCHANNEL_CONTROL: '/x/c.sock', XDG_RUNTIME_DIR: '/run/user/7' })).toEqual(['/x/c.sock']);
  });

  const root = process.getuid?.() === 0;
  const asRoot = root ? '' : ' (skipped: needs root to run a process as another user)';

  describe('a data directory too long for a socket path', () => {
    let savedHome: string | undefined;
    afterEach(() => {
      if (savedHome !== undefined) process.env.HOME = savedHome;
      savedHome = undefined;
    });
    /** A home of its own (0755, like a real one), and a data directory past the socket limit. */
    function longDataDir(): { home: string; data: string; socket: string } {
      savedHome = process.env.HOME;
      const home = tempDir('bc-home-');
      fs.chmodSync(home, 0o755);
      process.env.HOME = home;
      const data = path.join(tempDir(), 'd'.repeat(120));
      fs.mkdirSync(data, { recursive: true });
      return { home, data, socket: controlSocketPath({}, data) };
    }

    test(`gets its socket in ~/.backchannel-control, which another user cannot create first; a hub listens there and a client reaches it${asRoot}`, async () => {
      const { home, socket } = longDataDir();
      expect(path.dirname(socket)).toBe(path.join(home, '.backchannel-control'));
      if (root) {
        const tried = spawnSync('mkdir', [path.dirname(socket)], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 });
        expect(tried.status).not.toBe(0);
        expect(tried.stderr).toMatch(/Permission denied/);
      }
      headless = await startTestHeadless({ dir: tempDir(), control: socket });
      expect(fs.lstatSync(path.dirname(socket)).mode & 0o777).toBe(0o700);
      expect((await connectHub(socket).info()).mode).toBe('headless');
    });

    test.skipIf(!root)(`a stand-in directory that is a symlink, or another user's, is refused in one line${asRoot}`, async () => {
      const { socket } = longDataDir();
      const dir = path.dirname(socket);
      const elsewhere = tempDir('bc-elsewhere-');
      fs.symlinkSync(elsewhere, dir);
      await expect(startTestHeadless({ dir: tempDir(), control: socket })).rejects.toThrow(
        `The control endpoint's directory ${dir} is a symlink; refusing to listen there`,
      );
      expect(fs.readdirSync(elsewhere)).toEqual([]);
      fs.unlinkSync(dir);
      fs.mkdirSync(dir, { mode: 0o700 });
      fs.chownSync(dir, 65534, 65534);
      await expect(startTestHeadless({ dir: tempDir(), control: socket })).rejects.toThrow(
        /belongs to uid 65534, not to this user \(uid 0\)/,
      );
    });

    test('past the limit even in the home directory: one line saying what to do', () => {
      savedHome = process.env.HOME;
      process.env.HOME = '/' + 'h'.repeat(100);
      expect(() => controlSocketPath({}, '/' + 'd'.repeat(120))).toThrow(/give a shorter data directory, or set BACKCHANNEL_CONTROL/);
    });
  });
  test.skipIf(!root)(`another user cannot open the control endpoint (connect fails with EACCES)${asRoot}`, async () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o755); // the temp dir itself is traversable: only the endpoint's own directory guards it
    await hubIn(dir);
    const socket = path.join(dir, 'run', 'control.sock');
    const script = `require('net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('connected'); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(0) })`;
    const result = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 });
    expect(result.stdout.trim()).toBe('EACCES');
    // The owner still connects.
    expect(
      await new Promise((resolve) =>
        net.connect(socket).on('connect', function (this: net.Socket) {
          this.destroy();
          resolve('connected');
        }),
      ),
    ).toBe('connected');
  });
});
