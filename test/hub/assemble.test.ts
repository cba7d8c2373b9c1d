/**
 * Every shell wires the same hub (src/hub/assemble.ts): `backchannel serve` and `backchannel mcp` that becomes the
 * hub as real processes, the desktop app through the function its Electron main calls (src/desktop/app-hub.ts; the
 * Electron binary is not here). Each is looked at from outside, as a client would: its control endpoint answers and
 * is advertised in the data directory's lock, its presets are offered, a skipped schedule fire arrives as a signed
 * `schedule_skipped` webhook, and (serve and the app) MCP over HTTP lists the same presets. The app had drifted on
 * the first and third (issue 46 §7).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Webhook } from 'svix';
import { afterEach, describe, expect, test } from 'vitest';
import { readLockHolder } from '../../src/broker/history/data-dir-lock.js';
import { silentLogger } from '../../src/broker/log.js';
import { connectHub } from '../../src/client/hub-client.js';
import { MCP_PATH } from '../../src/mcp/http-endpoint.js';
import { startAppHub } from '../../src/desktop/app-hub.js';
import { assembleHub } from '../../src/hub/assemble.js';
import { tempDir, waitFor } from '../helpers/core.js';
import { anyCommandConfig } from '../helpers/run-policy.js';
import { cli, printed, start } from './control/hub-process.js';
import { callTool, connectHttp, connectStdio } from '../mcp/modern-client.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** A private home, state, config and socket directory, and a config whose webhook goes to `hookPort`. */
function shellEnv(hookPort: number): { dir: string; env: NodeJS.ProcessEnv; dataDir: string } {
  const dir = tempDir('bc-shell-');
  const config = anyCommandConfig(dir);
  appendFileSync(
    config,
    `notify:\n  webhooks:\n    - { url: "http://127.0.0.1:${hookPort}/hook", events: [schedule_skipped], secret: ${SECRET} }\n`,
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: path.join(dir, 'home'),
    XDG_STATE_HOME: path.join(dir, 'state'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    XDG_RUNTIME_DIR: '',
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    BACKCHANNEL_CONFIG: config,
  };
  delete env.BACKCHANNEL_CONTROL;
  delete env.BACKCHANNEL_USER_DATA;
  return { dir, env, dataDir: path.join(dir, 'state', 'backchannel') };
}

interface Receiver {
  port: number;
  bodies: { type: string; data: { schedule?: { schedule: string; reason: string } } }[];
  server: Server;
}

async function receiver(): Promise<Receiver> {
  const bodies: Receiver['bodies'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      new Webhook(SECRET).verify(body, req.headers as Record<string, string>);
      bodies.push(JSON.parse(body) as Receiver['bodies'][number]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, bodies, server };
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A running shell: where its MCP over HTTP is (with its bearer token), when it has one. */
interface Shell {
  mcp?: { url: string; token: string };
}

const SHELLS: Record<string, (env: NodeJS.ProcessEnv, dir: string) => Promise<Shell>> = {
  async serve(env) {
    const proc = start(['serve'], env);
    const url = await printed(proc, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
    const token = await printed(proc, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
    return { mcp: { url, token } };
  },
  async 'the desktop app'(env, dir) {
    // In this process, as Electron's main runs it: the run policy follows the config file of this process.
    const before = process.env.BACKCHANNEL_CONFIG;
    process.env.BACKCHANNEL_CONFIG = env.BACKCHANNEL_CONFIG;
    cleanups.push(() => (before === undefined ? delete process.env.BACKCHANNEL_CONFIG : (process.env.BACKCHANNEL_CONFIG = before)));
    const hub = await startAppHub({ userData: path.join(dir, 'user-data'), logger: silentLogger, logPath: '', version: '0.0.0-test', env });
    cleanups.push(() => hub.close());
    const token = readFileSync(path.join(dir, 'config', 'backchannel', 'mcp-token'), 'utf8').trim();
    return { mcp: { url: hub.mcp!.urlOf(MCP_PATH), token } };
  },
  async 'mcp, become the hub'(env, dir) {
    await connectStdio({ dir, env, socket: '' });
    return {};
  },
};

describe('every shell wires the same hub', () => {
  test.each(Object.keys(SHELLS))('%s: control endpoint in the lock, presets, schedule_skipped webhooks, MCP over HTTP', async (name) => {
    const hook = await receiver();
    cleanups.push(() => new Promise((resolve) => hook.server.close(resolve)));
    const { dir, env, dataDir } = shellEnv(hook.port);
    const shell = await SHELLS[name]!(env, dir);

    // Who finds the data directory held learns where the hub listens.
    const control = path.join(dataDir, 'control.sock');
    const holder = await waitFor(async () => (await readLockHolder(dataDir))?.control, 'the lock to name the control endpoint');
    expect(holder).toBe(control);
    const hub = connectHub(control);
    cleanups.push(() => hub.close());
    const presets = (await hub.info()).presets.map((p) => p.name);
    expect(presets).toContain('progress');

    // A fire skipped (the schedule is paused) is told to the config's webhook.
    await hub.addSchedule({ name: 'tick', everyMs: 1000, preset: 'progress', paused: true });
    const skipped = await waitFor(() => hook.bodies.find((body) => body.type === 'schedule_skipped'), 'the schedule_skipped webhook');
    expect(skipped.data.schedule).toMatchObject({ schedule: 'tick', reason: 'paused' });

    if (shell.mcp) {
      const client = await connectHttp(shell.mcp.url, { headers: { Authorization: `Bearer ${shell.mcp.token}` } });
      const listed = await callTool(client, 'list_tasks', {});
      expect(listed.value.presets.map((p: { name: string }) => p.name)).toEqual(presets);
    }
  });
});

describe('the desktop app reads the config as serve does', () => {
  test('a serve.port out of range stops it with the one line serve prints, naming the file and the key', async () => {
    const hook = await receiver();
    cleanups.push(() => new Promise((resolve) => hook.server.close(resolve)));
    const { dir, env } = shellEnv(hook.port);
    appendFileSync(env.BACKCHANNEL_CONFIG!, 'serve:\n  port: 70000\n');
    const before = process.env.BACKCHANNEL_CONFIG;
    process.env.BACKCHANNEL_CONFIG = env.BACKCHANNEL_CONFIG;
    cleanups.push(() => (before === undefined ? delete process.env.BACKCHANNEL_CONFIG : (process.env.BACKCHANNEL_CONFIG = before)));
    const starting = startAppHub({ userData: path.join(dir, 'user-data'), logger: silentLogger, logPath: '', version: '0.0.0-test', env });
    // Was: the MCP mount silently on a free port instead of the one the config names.
    await expect(starting).rejects.toThrow(/config\.yaml: serve\.port must be an integer from 0 to 65535, got 70000$/);
    const serve = await cli(['serve'], env);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain('serve.port must be an integer from 0 to 65535, got 70000');
  });
});

describe('a hub that cannot start', () => {
  test('undoes the steps it took: the lock of its data directory is released, and a hub starts there at once', async () => {
    const hook = await receiver();
    cleanups.push(() => new Promise((resolve) => hook.server.close(resolve)));
    const { dir, env } = shellEnv(hook.port);
    const control = path.join(dir, 'taken.sock');
    const options = { mode: 'headless' as const, version: '0.0.0-test', consoleLevel: false as const, env, control };
    const first = await assembleHub({ ...options, dataDir: path.join(dir, 'first'), ipcDir: path.join(dir, 'ipc-1') });
    cleanups.push(() => first.close());
    // The second's control endpoint is taken by the first: the last step fails after the broker, webhooks and scheduler.
    const second = path.join(dir, 'second');
    await expect(assembleHub({ ...options, dataDir: second, ipcDir: path.join(dir, 'ipc-2') })).rejects.toThrow(/taken\.sock/);
    expect(await readLockHolder(second)).toBeUndefined();
    const again = await assembleHub({ ...options, dataDir: second, ipcDir: path.join(dir, 'ipc-2'), control: false });
    cleanups.push(() => again.close());
    expect(again.scheduler).toBeDefined();
  });
});
