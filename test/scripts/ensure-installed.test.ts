/**
 * scripts/ensure-installed.mjs decides whether `npm start` / `npm test` must install first: here with
 * real lock files in a temporary directory (a real fresh clone plus `npm ci` is too slow for npm test).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain Node script (node built-ins only, it runs before anything is installed), without types
import { installState, testToolsPlan } from '../../scripts/ensure-installed.mjs';

const decide = installState as (root: string) => { state: 'missing' | 'stale' | 'ok'; reason: string };
const planTools = testToolsPlan as (where: { env: NodeJS.ProcessEnv; isRoot: boolean; debian: boolean }) => {
  install: string[];
  tell: string[];
};

interface Entry {
  version?: string;
  optional?: boolean;
  link?: boolean;
}

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-ensure-'));
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function writeLock(file: string, packages: Record<string, Entry>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ name: 'x', lockfileVersion: 3, packages }));
}

/** package-lock.json wants `wanted`; node_modules holds `installed` (hidden lock file plus package folders). */
function project(wanted: Record<string, Entry>, installed?: Record<string, Entry>): string {
  writeLock(path.join(root, 'package-lock.json'), { '': {}, ...wanted });
  if (installed) {
    writeLock(path.join(root, 'node_modules/.package-lock.json'), installed);
    for (const where of Object.keys(installed)) {
      fs.mkdirSync(path.join(root, where), { recursive: true });
      fs.writeFileSync(path.join(root, where, 'package.json'), '{}');
    }
  }
  return root;
}

const yaml = { 'node_modules/yaml': { version: '2.9.1' } };

describe('ensure-installed decides from the lock files', () => {
  it('installs a fresh clone: no node_modules', () => {
    expect(decide(project(yaml))).toEqual({ state: 'missing', reason: 'node_modules is not installed' });
  });

  it('does nothing when node_modules matches the lock, optional packages of other platforms absent', () => {
    const wanted = { ...yaml, 'node_modules/@esbuild/darwin-arm64': { version: '0.28.2', optional: true } };
    expect(decide(project(wanted, yaml)).state).toBe('ok');
  });

  it('reinstalls after a pull changed a version in the lock', () => {
    expect(decide(project({ 'node_modules/yaml': { version: '2.9.2' } }, yaml))).toEqual({
      state: 'stale',
      reason: 'node_modules/yaml is 2.9.1, package-lock.json wants 2.9.2',
    });
  });

  it('reinstalls when the lock gained a package', () => {
    const wanted = { ...yaml, 'node_modules/uuid': { version: '14.0.3' } };
    expect(decide(project(wanted, yaml)).reason).toBe('node_modules/uuid is in package-lock.json but not installed');
  });

  it('reinstalls when a package folder was deleted by hand', () => {
    project(yaml, yaml);
    fs.rmSync(path.join(root, 'node_modules/yaml'), { recursive: true });
    expect(decide(root)).toEqual({ state: 'stale', reason: 'node_modules/yaml was removed from node_modules' });
  });

  it('reinstalls when the record of the install is unreadable', () => {
    project(yaml, yaml);
    fs.writeFileSync(path.join(root, 'node_modules/.package-lock.json'), '{ half');
    expect(decide(root).state).toBe('stale');
  });

  it('finds this checkout installed (npm test has just used it)', () => {
    expect(decide(fileURLToPath(new URL('../..', import.meta.url)))).toMatchObject({ state: 'ok' });
  });
});

/** A PATH of one directory holding these programs: each a shell script exiting with its code. */
function pathWith(programs: Record<string, number>): string {
  const dir = fs.mkdtempSync(path.join(root, 'bin-'));
  for (const [name, code] of Object.entries(programs)) fs.writeFileSync(path.join(dir, name), `#!/bin/sh\nexit ${code}\n`, { mode: 0o755 });
  return dir;
}

describe('ensure-installed --tests decides which system programs npm test must install', () => {
  const everything = { 'redis-server': 0, jq: 0, python3: 0, 'apt-get': 0 };
  const asRoot = { isRoot: true, debian: true };

  it('installs nothing when every tool is on PATH (python3 with venv: its import check exits 0)', () => {
    expect(planTools({ env: { PATH: pathWith(everything) }, ...asRoot })).toEqual({ install: [], tell: [] });
  });

  it('as root on Debian, apt-get installs the packages of the missing tools', () => {
    expect(planTools({ env: { PATH: pathWith({ 'apt-get': 0 }) }, ...asRoot })).toEqual({
      install: ['redis-server', 'jq', 'python3-venv'],
      tell: [],
    });
    const noVenv = pathWith({ ...everything, python3: 1 }); // python3 without venv/ensurepip, as Debian ships it
    expect(planTools({ env: { PATH: noVenv }, ...asRoot }).install).toEqual(['python3-venv']);
  });

  it('when not root (or without apt-get), names each missing package in one line and installs nothing', () => {
    const plan = planTools({ env: { PATH: pathWith({ python3: 1 }) }, isRoot: false, debian: true });
    expect(plan.install).toEqual([]);
    expect(plan.tell).toEqual([
      'npm test: redis-server is missing, so the Redis fleet tests (test/fleet) are skipped: install it with `sudo apt-get install redis-server`',
      'npm test: jq is missing, so the strict-JSON check of `tasks --json` and GET /api/tasks (test/cli/json-output.test.ts) is skipped: install it with `sudo apt-get install jq`',
      "npm test: python3 with venv and ensurepip is missing, so the Python SDK's tests cannot make .venv-test/ and fail: install it with `sudo apt-get install python3-venv`",
    ]);
    expect(planTools({ env: { PATH: pathWith({ python3: 1 }) }, isRoot: true, debian: true }).tell).toHaveLength(3); // no apt-get
  });

  it('npm test runs the check (ensure-installed --tests)', () => {
    const pkg = JSON.parse(fs.readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
      scripts: { test: string };
    };
    expect(pkg.scripts.test).toMatch(/^node scripts\/ensure-installed\.mjs --tests && /);
  });
});
