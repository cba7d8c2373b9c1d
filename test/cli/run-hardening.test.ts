/**
 * `backchannel run` hardened (issue 12 items 4, 5, 13, 14): a broker that cannot start fails loudly,
 * timeouts a timer cannot hold are refused, agent text cannot steer the terminal, and input is capped.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, fixture, makeBroker, settle, tempDir } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');
const RAW_AGENT = path.join(ROOT, 'templates/raw-node/agent.mjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI; `env` replaces the given variables (undefined removes one). */
function cli(args: string[], env: Record<string, string | undefined> = {}, tty = false): Promise<Run> {
  return new Promise((resolve) => {
    const merged: Record<string, string | undefined> = { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...env };
    for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
    // `script` gives the CLI a real terminal on stdout and stderr (item 13 concerns what a TTY shows).
    const argv = tty
      ? ['script', ['-qefc', [process.execPath, BIN, ...args].map(quote).join(' '), '/dev/null']]
      : [process.execPath, [BIN, ...args]];
    const child = spawn(argv[0] as string, argv[1] as string[], {
      cwd: ROOT,
      env: merged as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function quote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

const noRunuser = spawnSync('runuser', ['--help']).error
  ? 'runuser is not installed'
  : process.getuid?.() !== 0
    ? 'acting as nobody needs root'
    : undefined;

describe('a broker that cannot start', () => {
  test.skipIf(noRunuser)(
    `another user (nobody) pre-creates the endpoint directory: run prints why and exits 1${noRunuser ? ` (skipped: ${noRunuser})` : ''}`,
    async () => {
      const shared = tempDir();
      chmodSync(shared, 0o1777);
      const uid = process.getuid!();
      const made = spawnSync('runuser', ['-u', 'nobody', '--', 'mkdir', '-m', '777', path.join(shared, `backchannel-${uid}`)]);
      expect(made.status).toBe(0);
      const run = await cli(['run', '--json', '--', process.execPath, RAW_AGENT], {
        CURSOR_IPC_DIR: undefined,
        XDG_RUNTIME_DIR: undefined,
        TMPDIR: shared,
      });
      expect(run.code).toBe(1);
      const body = JSON.parse(run.stdout) as { reason: string; message: string };
      expect(body.reason).toBe('crashed');
      expect(body.message).toMatch(/could not start: Endpoint directory .* belongs to uid 65534/);
    },
  );

  test('an endpoint directory too long for socket paths: run exits 1; in the library every task rejects', async () => {
    const long = path.join(tempDir(), 'x'.repeat(90));
    const run = await cli(['run', '--', process.execPath, RAW_AGENT], { CURSOR_IPC_DIR: long });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/could not start: Endpoint directory .* is too long/);

    const { broker } = makeBroker({ ipcDir: long });
    const early = broker.submit({ command: process.execPath, args: [RAW_AGENT] });
    expect(await settle(early.result)).toMatchObject({ ok: false, error: { reason: 'crashed' } });
    const late = broker.submit({ command: process.execPath, args: [RAW_AGENT] });
    expect(await settle(late.result)).toMatchObject({
      ok: false,
      error: { reason: 'crashed', message: expect.stringMatching(/could not start/) },
    });
  });

  test('a symlink as the endpoint directory is refused the same way', async () => {
    const shared = tempDir();
    mkdirSync(path.join(shared, 'elsewhere'));
    spawnSync('ln', ['-s', path.join(shared, 'elsewhere'), path.join(shared, `backchannel-${process.getuid?.() ?? 0}`)]);
    const run = await cli(['run', '--', process.execPath, RAW_AGENT], {
      CURSOR_IPC_DIR: undefined,
      XDG_RUNTIME_DIR: undefined,
      TMPDIR: shared,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/not a directory \(a symlink\?\)/);
  });
});

/** What `run` does the same in-process and on a hub. */
describe.each(RUN_MODES)('run (%s)', (mode) => {
  const where = runMode(mode);

  describe('timeouts a timer cannot hold', () => {
    test('--timeout and --heartbeat-timeout over 2^31-1 ms are usage errors; the library refuses them too', async () => {
      for (const flag of ['--timeout=99999999999', '--heartbeat-timeout=3000000000']) {
        const run = await cli(['run', flag, '--', process.execPath, RAW_AGENT], where.env());
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/more than the 2147483647 ms/);
      }
      const { broker } = makeBroker();
      expect(() => broker.submit({ command: 'node', timeoutMs: 99_999_999_999 })).toThrow(/timeoutMs.*2147483647/);
      expect(() => makeBroker({ defaults: { heartbeatTimeoutMs: 3_000_000_000 } })).toThrow(/heartbeatTimeoutMs/);
    });

    test('the largest allowed timeout does not fire early', async () => {
      const run = await cli(
        ['run', '--json', '--timeout', '2147483647', '--heartbeat-timeout', '2147483647', '--', process.execPath, RAW_AGENT],
        where.env(),
      );
      expect(run.code).toBe(0);
    });
  });

  describe('agent text on a terminal', () => {
    test.skipIf(spawnSync('script', ['--version']).error)(
      'escape sequences from partials, errors and stderr are neutralised on a TTY',
      async () => {
        const run = await cli(['run', '--verbose', '--', process.execPath, fixture('round2/terminal-attack.mjs')], where.env(), true);
        expect(run.code).toBe(1);
        const shown = run.stdout;
        expect(shown).toContain('OK all tests passed');
        // The only escape sequences left are the status line's own (\r\x1b[2K) and none from the agent.
        const foreign = shown.replace(/\r\u001b\[2K/g, '').match(/[\u0000-\u0008\u000b-\u000c\u000e-\u001f\u007f-\u009f]/g);
        expect(foreign).toBeNull();
        expect(shown).not.toContain('\u001b]0;');
      },
    );
  });

  describe('input size', () => {
    test('--input @/dev/zero ends in a clear usage error instead of filling memory', async () => {
      const run = await cli(['run', '--input', '@/dev/zero', '--', process.execPath, RAW_AGENT], where.env());
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--input \/dev\/zero is over the 64 MiB limit/);
    });
  });
});

describe('broker flags of run', () => {
  test('--env-deny hides variables and --env-allow passes only the named ones', async () => {
    const env = { BC_SECRET: 's3cret', BC_PUBLIC: 'hello' };
    const agent = [process.execPath, fixture('round2/env-echo.mjs')];
    const all = await cli(['run', '--json', '--', ...agent], env);
    expect(JSON.parse(all.stdout).data).toEqual({ secret: 's3cret', public: 'hello' });
    const denied = await cli(['run', '--json', '--env-deny', 'BC_SEC*', '--', ...agent], env);
    expect(JSON.parse(denied.stdout).data).toEqual({ secret: null, public: 'hello' });
    const allowed = await cli(['run', '--json', '--env-allow', 'PATH,BC_PUBLIC', '--', ...agent], env);
    expect(JSON.parse(allowed.stdout).data).toEqual({ secret: null, public: 'hello' });
  });

  test('--require-token refuses the design template (no token) and says why', async () => {
    const agent = [process.execPath, fixture('round2/design-template.mjs')];
    expect((await cli(['run', '--json', '--', ...agent])).code).toBe(0);
    const strict = await cli(['run', '--json', '--require-token', '--', ...agent]);
    expect(strict.code).toBe(1);
    expect(JSON.parse(strict.stdout).message).toMatch(/1 connection rejected: no token on its first line/);
  });
});
