/** `backchannel gateway` as a user runs it: the real CLI (bin/backchannel.js, built to dist/). */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { raw, standinModels } from './helpers.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');
const NOBODY = 65534;

function start(args: string[], dir: string, more: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CURSOR_IPC_DIR: path.join(dir, 'ipc'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    // No hub at this control endpoint: the gateway runs its tasks itself (test/gateway/hub.test.ts covers the hub).
    BACKCHANNEL_CONTROL: path.join(dir, 'no-hub.sock'),
  };
  delete env.BACKCHANNEL_CONFIG;
  delete env.BACKCHANNEL_GATEWAY_KEY_FILE;
  Object.assign(env, more);
  const child = spawn(process.execPath, [BIN, 'gateway', ...args], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exited, out: () => stdout, err: () => stderr };
}

/** The README's gateway block, as written: the fenced block that names this file as its test. */
function readmeBlock(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /^```sh tested-by=test\/gateway\/command\.test\.ts\n([\s\S]*?)^```$/m.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md has no block tested by test/gateway/command.test.ts');
  return block;
}

/**
 * Runs a bash script in a private network namespace when this machine allows one (root here): the
 * README's fixed port 8976 is then ours alone, whatever else runs on the machine.
 */
function privateNetwork(script: string): [string, string[]] {
  const probe = spawnSync('unshare', ['--net', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
  return probe.status === 0 ? ['unshare', ['--net', 'bash', '-c', `ip link set lo up\n${script}`]] : ['bash', ['-c', script]];
}

describe('backchannel gateway', () => {
  test('the README block runs as written on a fresh, empty HOME: no config file, a key generated at the first start', async () => {
    const [start, ...curl] = readmeBlock().trimEnd().split('\n');
    expect(start).toBe('backchannel gateway');
    const dir = tempDir('bc-gwreadme-');
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    // `backchannel` is this checkout's bin (the installed command, as test/docs has it); the
    // Cursor CLI is its recorded stand-in. Nothing else: no XDG variables, no hub, no config.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(BIN, path.join(bin, 'backchannel'));
    const script = [
      'set -e',
      `${start} > gateway.log 2>&1 &`,
      'for i in $(seq 600); do grep -q "Press Ctrl+C" gateway.log && break; kill -0 $! 2>/dev/null || break; sleep 0.1; done',
      ...curl,
      'kill -INT $!',
      'wait $!',
    ].join('\n');
    const [command, args] = privateNetwork(script);
    const env = { PATH: [bin, fixture('gateway/bin'), path.dirname(process.execPath), '/usr/bin', '/bin'].join(':'), HOME: home };
    const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const log = fs.existsSync(path.join(dir, 'gateway.log')) ? fs.readFileSync(path.join(dir, 'gateway.log'), 'utf8') : '';
    expect(code, `${output}\n--- gateway ---\n${log}`).toBe(0);
    const keyFile = path.join(home, '.config/backchannel/gateway-key');
    expect(log).toContain('Config: defaults (no config file)');
    expect(log).toContain(`API key (new; saved in ${keyFile}, shown only this once)`);
    expect(output).toContain('"object":"chat.completion.chunk"');
    expect(output).toContain('data: [DONE]');
  }, 60_000);

  test('--help prints the options and exits 0', async () => {
    const run = start(['--help'], tempDir());
    expect(await run.exited).toBe(0);
    expect(run.out()).toContain('--config <path>');
  });

  test('a bad --port is a usage error', async () => {
    const run = start(['--port', 'abc'], tempDir());
    expect(await run.exited).toBe(2);
    expect(run.err()).toContain('--port');
  });

  test('a missing --config file fails with its name', async () => {
    const run = start(['--config', 'nope.yaml'], tempDir());
    expect(await run.exited).toBe(1);
    expect(run.err()).toContain('nope.yaml');
  });

  test('prints the base URL, its new key once and a curl example, answers requests with the key, and stops on SIGINT', async () => {
    const dir = tempDir('bc-gwcli-');
    const config = path.join(dir, 'config.yaml');
    fs.writeFileSync(config, `default_model: echo\nmodels: ${JSON.stringify(standinModels(dir))}\n`);
    const run = start(['--port', '0', '--config', config], dir);
    await waitFor(() => run.out().includes('Press Ctrl+C') || run.child.exitCode !== null, 'the gateway to print its URL', 30_000);
    const baseURL = /Backchannel gateway: (\S+)/.exec(run.out())?.[1];
    expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(run.out()).toContain(`curl -N ${baseURL}/chat/completions`);
    const keyFile = path.join(dir, 'config/backchannel/gateway-key');
    const key = fs.readFileSync(keyFile, 'utf8').trim();
    expect(run.out()).toContain(`API key (new; saved in ${keyFile}, shown only this once): ${key}`);
    expect(run.out()).toContain(`-H "Authorization: Bearer $(cat ${keyFile})"`);

    const body = { messages: [{ role: 'user', content: 'cli' }] };
    expect((await raw(`${baseURL}/chat/completions`, body)).status).toBe(401);
    const res = await raw(`${baseURL}/chat/completions`, body, { headers: { Authorization: `Bearer ${key}` } });
    expect(res.json.choices[0].message.content).toBe('Hello: cli');

    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
  });

  /** Starts the gateway, waits for its banner (or its exit), stops it; what it printed. */
  async function banner(args: string[], dir: string, request?: (baseURL: string) => Promise<void>, env: NodeJS.ProcessEnv = {}) {
    const run = start(args, dir, env);
    await waitFor(() => run.out().includes('Press Ctrl+C') || run.child.exitCode !== null, 'the gateway to start or fail', 30_000);
    const baseURL = /Backchannel gateway: (\S+)/.exec(run.out())?.[1];
    if (baseURL && request) await request(baseURL);
    run.child.kill('SIGINT');
    return { code: await run.exited, out: run.out(), err: run.err() };
  }

  /** The one config file of a gateway started in `dir` (XDG_CONFIG_HOME=<dir>/config). */
  function oneFile(dir: string, text: string): string {
    const file = path.join(dir, 'config/backchannel/config.yaml');
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, text, { mode: 0o600 });
    return file;
  }

  test('the gateway: section of the one config file generates and requires a key, as --config does; auth: none there turns it off', async () => {
    const dir = tempDir('bc-gwsection-');
    oneFile(dir, `gateway:\n  default_model: echo\n  models: ${JSON.stringify(standinModels(dir))}\n`);
    const body = { messages: [{ role: 'user', content: 'section' }] };
    const keyFile = path.join(dir, 'config/backchannel/gateway-key');
    const keyed = await banner(['--port', '0'], dir, async (baseURL) => {
      expect((await raw(`${baseURL}/chat/completions`, body)).status).toBe(401);
      const key = fs.readFileSync(keyFile, 'utf8').trim();
      const res = await raw(`${baseURL}/chat/completions`, body, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.json.choices[0].message.content).toBe('Hello: section');
    });
    expect(keyed.out).toContain('(gateway section)');
    expect(keyed.out).toContain(`API key (new; saved in ${keyFile}, shown only this once)`);
    expect(keyed.out).not.toContain('API key: none');

    oneFile(dir, `gateway:\n  auth: none\n  default_model: echo\n  models: ${JSON.stringify(standinModels(dir))}\n`);
    const open = await banner(['--port', '0'], dir, async (baseURL) => {
      expect((await raw(`${baseURL}/chat/completions`, body)).status).toBe(200);
    });
    expect(open.out).toContain('API key: none (auth: none');
  });

  /** Ways another user's config reaches us; each must be refused with one line saying why. */
  const FOREIGN: Array<[string, (file: string, dir: string) => string, RegExp]> = [
    ['owned by nobody', (file) => (fs.chownSync(file, NOBODY, NOBODY), file), /belongs to uid 65534/],
    ['writable by everyone', (file) => (fs.chmodSync(file, 0o666), file), /writable by everyone/],
    ['writable by its group', (file) => (fs.chmodSync(file, 0o620), file), /writable by its group/],
    [
      "reached through nobody's symlink",
      (file, dir) => {
        const link = path.join(dir, 'link.yaml');
        fs.symlinkSync(file, link);
        fs.lchownSync(link, NOBODY, NOBODY);
        return link;
      },
      /through .*link\.yaml, a symlink of uid 65534/,
    ],
    [
      "reached through nobody's symlink to its directory",
      (file, dir) => {
        const real = path.join(dir, 'real');
        fs.mkdirSync(real, { mode: 0o700 });
        fs.renameSync(file, path.join(real, 'gw.yaml'));
        const via = path.join(dir, 'via');
        fs.symlinkSync(real, via);
        fs.lchownSync(via, NOBODY, NOBODY);
        return path.join(via, 'gw.yaml');
      },
      /through .*via, a symlink of uid 65534/,
    ],
    [
      'in a directory others can write',
      (file, dir) => {
        const shared = path.join(dir, 'shared');
        fs.mkdirSync(shared);
        fs.chmodSync(shared, 0o777);
        fs.renameSync(file, path.join(shared, 'gw.yaml'));
        return path.join(shared, 'gw.yaml');
      },
      /directory .*shared is writable by others/,
    ],
  ];

  test.each(FOREIGN)(
    "a config file %s is refused, saying why in one line (--config and the one file's gateway: section)",
    async (_, plant, why) => {
      const dir = tempDir('bc-gwforeign-');
      const file = path.join(dir, 'gw.yaml');
      fs.writeFileSync(file, 'auth: none\nmodels: { evil: { command: /bin/true } }\n', { mode: 0o600 });
      const named = await banner(['--port', '0', '--config', plant(file, dir)], dir);
      expect(named.code).toBe(1);
      expect(named.err).toMatch(why);
      expect(named.err.trim().split('\n')).toHaveLength(1);
      expect(named.out).not.toContain('Backchannel gateway:');

      const other = tempDir('bc-gwforeign-one-');
      const one = path.join(other, 'config.yaml');
      fs.writeFileSync(one, 'gateway:\n  auth: none\n', { mode: 0o600 });
      const section = await banner(['--port', '0'], other, undefined, { BACKCHANNEL_CONFIG: plant(one, other) });
      expect(section.code).toBe(1);
      expect(section.err).toMatch(/refusing .*config file must be yours/);
    },
  );
});
