/**
 * Real client CLIs and SDKs for the opt-in suite (`npm run test:clients`): `ensureClient(pkg, version)`
 * installs one pinned npm package into `.cache/clients/<pkg>@<version>/` with `npm install --prefix`
 * (once; later calls reuse it) and returns where it is, or why it cannot be had. With
 * `BACKCHANNEL_REQUIRE_CLIENTS=1` (set by .ci/run) a package that cannot be installed is an error,
 * so CI never passes by skipping.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './core.js';

export interface Client {
  /** The package directory (node_modules/<pkg>). */
  dir: string;
  /** Its first `bin` entry, if it has one. */
  bin?: string;
}

/** Where installed clients live (ignored by git). */
export const CLIENTS_DIR = path.join(ROOT, '.cache', 'clients');

/** An installed client, or the reason it cannot be installed (for `test.skipIf`/`describe.skipIf`). */
export function ensureClient(pkg: string, version: string): Client | { skip: string } {
  const prefix = path.join(CLIENTS_DIR, `${pkg}@${version}`);
  const dir = path.join(prefix, 'node_modules', pkg);
  if (!isInstalled(dir, version)) {
    fs.mkdirSync(prefix, { recursive: true });
    const run = spawnSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', `${pkg}@${version}`], {
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (run.status !== 0 || !isInstalled(dir, version)) {
      const why = (run.stderr || run.error?.message || `exit ${run.status}`).trim().split('\n').slice(-3).join(' / ');
      const reason = `${pkg}@${version} cannot be installed here: ${why}`;
      if (process.env.BACKCHANNEL_REQUIRE_CLIENTS === '1') throw new Error(reason);
      return { skip: reason };
    }
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
  const binEntry = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  return binEntry === undefined ? { dir } : { dir, bin: path.join(dir, binEntry) };
}

function isInstalled(dir: string, version: string): boolean {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: string }).version === version;
  } catch {
    return false;
  }
}

/** Runs a client CLI to its end with stdin closed (`/dev/null`), collecting its output. */
export function runCli(
  bin: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `ensureClient` split for a suite: the bin/dir (empty when skipped) and the skip reason. */
export function clientFor(pin: readonly [string, string]): { bin: string; dir: string; skip: string | undefined; title: string } {
  const client = ensureClient(pin[0], pin[1]);
  const skip = 'skip' in client ? client.skip : undefined;
  const found = 'skip' in client ? { bin: '', dir: '' } : { bin: client.bin ?? '', dir: client.dir };
  return { ...found, skip, title: `${pin[0]}@${pin[1]}${skip ? ` (skipped: ${skip})` : ''}` };
}

/** An installed Python client: the venv's `python`. */
export interface PythonClient {
  python: string;
}

/**
 * Installs one pinned Python package into its own venv at `.cache/clients/py-<pkg>@<version>/` (`python3 -m venv`,
 * then `pip install <pkg>==<version>` from the package index pip is configured with), once; later calls reuse it.
 * Like `ensureClient`, the reason when it cannot be had, or an error with `BACKCHANNEL_REQUIRE_CLIENTS=1`.
 */
export function ensurePythonClient(pkg: string, version: string): PythonClient | { skip: string } {
  const venv = path.join(CLIENTS_DIR, `py-${pkg}@${version}`);
  const python = path.join(venv, 'bin', 'python');
  const installed = (): boolean =>
    spawnSync(python, ['-m', 'pip', 'show', pkg], { encoding: 'utf8' }).stdout?.includes(`Version: ${version}\n`) === true;
  if (!installed()) {
    fs.mkdirSync(CLIENTS_DIR, { recursive: true });
    const steps: Array<[string, string[]]> = [
      ['python3', ['-m', 'venv', '--clear', venv]],
      [python, ['-m', 'pip', 'install', '--quiet', '--retries', '1', `${pkg}==${version}`]], // an index that cannot be reached fails fast
    ];
    // pip reads the user's index configuration from ~/.config/pip; the tests' global set-up points XDG_CONFIG_HOME elsewhere.
    const env = { ...process.env, XDG_CONFIG_HOME: path.join(os.homedir(), '.config') };
    for (const [command, args] of steps) {
      const run = spawnSync(command, args, { encoding: 'utf8', timeout: 300_000, env });
      if (run.status === 0) continue;
      const why = (run.stderr || run.error?.message || `exit ${run.status}`).trim().split('\n').slice(-3).join(' / ');
      const reason = `${pkg}==${version} (Python) cannot be installed here: ${why}`;
      if (process.env.BACKCHANNEL_REQUIRE_CLIENTS === '1') throw new Error(reason);
      return { skip: reason };
    }
  }
  return { python };
}
