/** What `npm publish` would ship: the CLI, the built code, templates and docs — no tests or benchmarks. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../helpers/core.js';

test('the package tarball holds what the CLI, library and app need and nothing of the tests', () => {
  const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  expect(packed.status, packed.stderr).toBe(0);
  const files = (JSON.parse(packed.stdout) as [{ files: { path: string }[] }])[0].files.map((file) => file.path);
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
