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

/**
 * A venv under `.cache/clients/` with pinned Python packages (`pip install name==version`, from the
 * package index pip is set up with), for `test.skipIf`; like `ensureClient`, an install that fails is
 * an error under `BACKCHANNEL_REQUIRE_CLIENTS=1`.
 */
export function ensurePythonClients(pins: ReadonlyArray<readonly [string, string]>): { python: string } | { skip: string } {
  const specs = pins.map(([name, version]) => `${name}==${version}`);
  const venv = path.join(CLIENTS_DIR, `python-${specs.join('-')}`);
  const python = path.join(venv, 'bin', 'python');
  const check = `import importlib.metadata as m; assert all(m.version(n) == v for n, v in ${JSON.stringify(pins)})`;
  if (spawnSync(python, ['-c', check], { stdio: 'ignore' }).status === 0) return { python };
  fs.rmSync(venv, { recursive: true, force: true });
  const steps: Array<[string, string[]]> = [
    ['python3', ['-m', 'venv', venv]],
    [python, ['-m', 'pip', 'install', '--quiet', '--retries', '0', '--timeout', '10', ...specs]],
  ];
  // pip reads the user's index configuration from ~/.config/pip; the tests' global set-up points XDG_CONFIG_HOME elsewhere.
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(os.homedir(), '.config') };
  for (const [command, args] of steps) {
    const run = spawnSync(command, args, { encoding: 'utf8', timeout: 600_000, env });
    if (run.status !== 0) {
      const why = (run.stderr || run.error?.message || `exit ${run.status}`).trim().split('\n').slice(-3).join(' / ');
      const reason = `${specs.join(' ')} cannot be installed here: ${why}`;
      if (process.env.BACKCHANNEL_REQUIRE_CLIENTS === '1') throw new Error(reason);
      return { skip: reason };
    }
  }
  return { python };
}
