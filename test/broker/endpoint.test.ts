import { chmodSync, mkdirSync, statSync, symlinkSync, existsSync, unlinkSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import {
  chooseEndpointDir,
  ensurePrivateDir,
  newEndpointPath,
  sweepStaleSockets,
  MAX_SOCKET_PATH_BYTES,
} from '../../src/broker/transport/endpoint.js';
import { filterEnv } from '../../src/broker/process/environment.js';
import { makeBroker, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { leaveStaleSocket } from '../helpers/processes.js';

describe('endpoint directory', () => {
  test('is created private (0700) and socket paths fit the platform limit', () => {
    const dir = path.join(tempDir(), 'ipc');
    ensurePrivateDir(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const endpoint = newEndpointPath(dir);
    expect(Buffer.byteLength(endpoint)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    expect(endpoint).toMatch(/\/[a-z2-7]{16}\.sock$/);
  });

  test('an existing directory open to others is tightened; a symlink is refused', () => {
    const dir = path.join(tempDir(), 'loose');
    mkdirSync(dir, { mode: 0o777 });
    chmodSync(dir, 0o777);
    ensurePrivateDir(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const link = path.join(tempDir(), 'link');
    symlinkSync(dir, link);
    expect(() => ensurePrivateDir(link)).toThrow(/not a directory \(a symlink\?\)/);
  });

  test('falls back to a short directory when the preferred one is too long (macOS tmpdir)', () => {
    const saved = { xdg: process.env.XDG_RUNTIME_DIR, dir: process.env.CURSOR_IPC_DIR };
    delete process.env.CURSOR_IPC_DIR;
    process.env.XDG_RUNTIME_DIR = `/private/var/folders/${'x'.repeat(80)}/T`;
    try {
      const chosen = chooseEndpointDir();
      expect(chosen.startsWith('/tmp/bc-')).toBe(true);
    } finally {
      if (saved.xdg === undefined) delete process.env.XDG_RUNTIME_DIR;
      else process.env.XDG_RUNTIME_DIR = saved.xdg;
      if (saved.dir !== undefined) process.env.CURSOR_IPC_DIR = saved.dir;
    }
  });

  test('an explicit directory that is too long gives a clear error', () => {
    const long = path.join(tempDir(), 'y'.repeat(90));
    expect(() => ensurePrivateDir(long)).toThrow(/too long for socket paths/);
  });

  test('stale socket files of a crashed broker are swept at start; live ones are kept', async () => {
    const { ipcDir } = makeBroker();
    ensurePrivateDir(ipcDir);
    const stale = path.join(ipcDir, 'aaaaaaaaaaaaaaaa.sock');
    const live = path.join(ipcDir, 'bbbbbbbbbbbbbbbb.sock');
    await leaveStaleSocket(stale);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(live, resolve));
    try {
      expect(existsSync(stale)).toBe(true);
      const removed = await sweepStaleSockets(ipcDir);
      expect(removed).toEqual([stale]);
      expect(existsSync(live)).toBe(true);
    } finally {
      server.close();
    }
  });

  test('a socket that refuses at first but accepts when asked again (a broker between bind and listen) is kept', async () => {
    const { ipcDir } = makeBroker();
    ensurePrivateDir(ipcDir);
    const late = path.join(ipcDir, 'cccccccccccccccc.sock');
    await leaveStaleSocket(late);
    // The sweep finds it refusing; it starts listening before the sweep asks again (1 s later, on a fake clock).
    const clock = new FakeClock();
    const sweeping = sweepStaleSockets(ipcDir, 1000, clock);
    await waitFor(() => clock.pending === 1, 'the sweep to find it refusing');
    unlinkSync(late);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(late, resolve));
    clock.advance(1000);
    try {
      expect(await sweeping).toEqual([]);
      expect(existsSync(late)).toBe(true);
    } finally {
      server.close();
    }
  });

  test("several brokers starting together in one directory never sweep each other's endpoints", async () => {
    // CI saw "could not open the task endpoint: ENOENT … chmod" with three `npm start`s at once: one
    // broker's sweep took a socket another had bound but (preempted) not yet listened on.
    const { ipcDir } = makeBroker();
    ensurePrivateDir(ipcDir);
    const script = `
      const net = require('net'), path = require('path');
      const dir = ${JSON.stringify(ipcDir)};
      let bad = 0;
      (async () => {
        const { sweepStaleSockets } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/broker/transport/endpoint.js')).href)});
        for (let i = 0; i < 150; i++) {
          const file = path.join(dir, process.pid + '-' + i + '.sock');
          const server = net.createServer();
          server.listen(file);
          await sweepStaleSockets(dir);
          try { require('fs').chmodSync(file, 0o600); } catch { bad++; }
          await new Promise((r) => server.close(r));
        }
        console.log(bad);
      })();`;
    const racers = Array.from({ length: 3 }, () => spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] }));
    const lost = await Promise.all(
      racers.map(
        (child) =>
          new Promise<number>((resolve) => {
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
            child.once('exit', () => resolve(Number(out.trim())));
          }),
      ),
    );
    expect(lost).toEqual([0, 0, 0]);
  });
});

describe('sub-agent environment', () => {
  test('hand-off variables of an outer task and ELECTRON_RUN_AS_NODE never leak', () => {
    const env = filterEnv({
      PATH: '/bin',
      CURSOR_IPC_TOKEN: 'secret',
      CURSOR_TASK_ID: 'outer',
      ELECTRON_RUN_AS_NODE: '1',
      LANG: 'en_US.UTF-8',
    });
    expect(env).toMatchObject({ PATH: '/bin', LANG: 'en_US.UTF-8' });
    expect(env.CURSOR_IPC_TOKEN).toBeUndefined();
    expect(env.CURSOR_TASK_ID).toBeUndefined();
    expect(env.ELECTRON_RUN_AS_NODE).toBeUndefined();
  });

  test('a UTF-8 locale is set only when the parent has none', () => {
    expect(filterEnv({ PATH: '/bin' })).toMatchObject({ LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' });
    expect(filterEnv({ LC_ALL: 'de_DE.UTF-8' }).LANG).toBeUndefined();
  });

  test('allow and deny lists filter the inherited environment', () => {
    const source = { PATH: '/bin', HOME: '/root', OPENAI_API_KEY: 'sk-x', APP_SECRET: 'hush', AWS_SECRET_ACCESS_KEY: 'a' };
    expect(Object.keys(filterEnv(source, { allow: ['PATH', 'HOME', 'OPENAI_*'] })).sort()).toEqual(
      ['HOME', 'LANG', 'LC_ALL', 'OPENAI_API_KEY', 'PATH', 'PYTHONIOENCODING', 'PYTHONUNBUFFERED'].sort(),
    );
    const denied = filterEnv(source, { deny: ['*SECRET*'] });
    expect(denied.APP_SECRET).toBeUndefined();
    expect(denied.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(denied.OPENAI_API_KEY).toBe('sk-x');
  });
});
