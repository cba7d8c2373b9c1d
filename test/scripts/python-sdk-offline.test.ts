/**
 * The Python SDK's suite where no package index can be reached and this Python cannot build the SDK
 * offline (setuptools < 70.1 without `wheel`, as a fresh Python 3.11 has): one line says why, and the
 * tests count as not run, instead of pip's traceback once per test.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';

const python = 'python3';
const probe = spawnSync(
  python,
  [
    '-c',
    'import pytest, setuptools; v = tuple(int(p) for p in setuptools.__version__.split(".")[:2]); import importlib.util as u; print(v < (70, 1) and u.find_spec("wheel") is None)',
  ],
  { encoding: 'utf8' },
);
const cannotBuildOffline = probe.status === 0 && probe.stdout.trim() === 'True';

describe('the Python SDK suite without a package index', () => {
  test.skipIf(!cannotBuildOffline)('says in one line that the SDK could not be installed, and runs none of its tests', () => {
    const run = spawnSync(
      python,
      ['-m', 'pytest', path.join(ROOT, 'sdk/python/tests/test_package.py'), '-q', '-rs', '-p', 'no:cacheprovider'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 300_000,
        env: {
          ...process.env,
          // pip's own configuration (a local index here) is set aside; the only index is a closed loopback port.
          PIP_CONFIG_FILE: '/dev/null',
          PIP_INDEX_URL: 'http://127.0.0.1:9/simple',
          PIP_EXTRA_INDEX_URL: '',
          PIP_FIND_LINKS: '',
          PIP_RETRIES: '0',
          PIP_TIMEOUT: '5',
          TMPDIR: tempDir(),
        },
      },
    );
    const output = run.stdout + run.stderr;
    expect(run.status, output).toBe(0);
    expect(output).not.toContain('Traceback');
    expect(output).not.toMatch(/\bfailed\b|\berrors?\b/);
    // The tests that need the installed SDK are skipped, each with the one line (pytest lists one per test).
    const skipped = output.split('\n').filter((line) => line.startsWith('SKIPPED'));
    expect(skipped.length).toBeGreaterThan(0);
    for (const line of skipped)
      expect(line).toMatch(/: the SDK could not be installed: no package index reachable, .*`pip install wheel` once\)$/);
  });
});
