/** What `npm publish` would ship: the CLI, the built code, templates and docs — no tests or benchmarks. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

interface Packed {
  /** The directory the tarball was written to. */
  dir: string;
  /** The tarball's name in `dir`. */
  tarball: string;
  /** The paths in the tarball, as `npm pack --json` lists them. */
  files: string[];
}

let packed: Packed | undefined;
afterAll(() => {
  if (packed) fs.rmSync(packed.dir, { recursive: true, force: true });
});
/**
 * `npm pack` of the checkout (dist/ is built: npm test builds first, so pack skips `prepare`), once
 * for this file: both tests read the same tarball (each pack takes npm's start-up and a walk of the tree).
 */
function pack(): Packed {
  if (packed) return packed;
  // Kept for the file (core's tempDir()s are removed after the test that made them).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-pack-'));
  const run = spawnSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  const [report] = JSON.parse(run.stdout) as [{ filename: string; files: { path: string }[] }];
  const tarball = fs.readdirSync(dir).find((name) => /^backchannel-agents-.*\.tgz$/.test(name));
  expect(tarball, run.stdout).toBe(report.filename);
  packed = { dir, tarball: tarball!, files: report.files.map((file) => file.path) };
  return packed;
}

test('the package tarball holds what the CLI, library and app need and nothing of the tests', () => {
  const { files } = pack();
  for (const needed of [
    'bin/backchannel.js',
    'dist/cli/main.js',
    'dist/agent-runtime/bundle.js',
    'dist/renderer/index.html',
    'templates/basic/agent.ts',
    'templates/_shared/run-headless.mjs',
    'scripts/demo-agents/agent.mjs',
    'scripts/start.js',
    'LICENSE',
    'README.md',
    'docs/protocol.md',
  ]) {
    expect(files, needed).toContain(needed);
  }
  expect(files.filter((file) => /^(test|bench|\.ci|\.github|src)\//.test(file))).toEqual([]);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    license: string;
    allowScripts: Record<string, boolean>;
  };
  expect(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).toContain(pkg.license === 'MIT' ? 'MIT License' : pkg.license);
  // Every dependency with an install script is reviewed in allowScripts (npm warns about the others).
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const withScripts = Object.entries(lock.packages)
    .filter(([, entry]) => entry.hasInstallScript)
    .map(([name]) => name.replace(/^.*node_modules\//, ''));
  expect(withScripts.filter((name) => !(name in pkg.allowScripts))).toEqual([]);
});

test('the README install from a clone works: npm pack, then npm install --global of the tarball puts a working backchannel on PATH', () => {
  // The README's commands as written (`npm pack`: pack() above), with npm's global prefix in a
  // temporary directory instead of the machine's.
  const { dir } = pack();
  const prefix = path.join(tempDir(), 'global');
  const env = {
    ...process.env,
    npm_config_prefix: prefix,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
  const installed = spawnSync('bash', ['-c', 'npm install --global ./backchannel-agents-*.tgz'], {
    cwd: dir,
    encoding: 'utf8',
    env,
    timeout: 240_000,
  });
  expect(installed.status, installed.stderr).toBe(0);
  // npm 11 lists the install scripts it did not run; the README names each and why none is needed.
  const unrun = [...installed.stderr.matchAll(/^npm warn install-scripts {3}(\S+)@/gm)].map((m) => m[1]).sort();
  if (unrun.length > 0) {
    expect(unrun).toEqual(['backchannel-agents', 'esbuild', 'msgpackr-extract']);
    const readme = fs.readFileSync(path.join(ROOT, 'docs', 'install.md'), 'utf8');
    for (const name of unrun) expect(readme).toMatch(new RegExp(`\`${name}\` (itself )?\\(\`(prepare|postinstall|install)\``));
  }
  const onPath = { ...env, PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH ?? ''}` };
  const version = spawnSync('backchannel', ['--version'], { cwd: dir, encoding: 'utf8', env: onPath });
  const own = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  expect(version.stdout.trim(), version.stderr).toContain(own);
  // The installed command runs a sub-agent from the installed templates.
  const agent = path.join(prefix, 'lib', 'node_modules', 'backchannel-agents', 'templates', 'raw-node', 'agent.mjs');
  const run = spawnSync('backchannel', ['run', '--local', '--input', '{"path":"."}', '--', 'node', agent], {
    cwd: dir,
    encoding: 'utf8',
    env: onPath,
    timeout: 60_000,
  });
  expect(run.status, run.stdout + run.stderr).toBe(0);
  expect(run.stdout).toContain('"files"');
}, 300_000);
