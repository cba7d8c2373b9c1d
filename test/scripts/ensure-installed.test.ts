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
import { installState } from '../../scripts/ensure-installed.mjs';

const decide = installState as (root: string) => { state: 'missing' | 'stale' | 'ok'; reason: string };

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
