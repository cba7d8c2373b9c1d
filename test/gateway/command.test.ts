/** `backchannel gateway` as a user runs it: the real CLI (bin/backchannel.js, built to dist/). */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir, waitFor } from '../helpers/core.js';
import { raw, standinModels } from './helpers.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

function start(args: string[], dir: string) {
  const child = spawn(process.execPath, [BIN, 'gateway', ...args], {
    cwd: dir,
    // No hub at this control endpoint: the gateway runs its tasks itself (test/gateway/hub.test.ts covers the hub).
    env: {
      ...process.env,
      CURSOR_IPC_DIR: path.join(dir, 'ipc'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      BACKCHANNEL_CONTROL: path.join(dir, 'no-hub.sock'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exited, out: () => stdout, err: () => stderr };
}

describe('backchannel gateway', () => {
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
});
