/**
 * The `run:` and `serve:` sections read through their shapes (src/config/sections.ts): typed values,
 * durations as people write them, and one line naming the key for a wrong value or an unknown key.
 * Then through the real CLI: `serve` merges the file's numbers (checked there) with its flags.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { LoadedConfig } from '../../src/config/file.js';
import { commandSection } from '../../src/config/sections.js';
import { MAX_DURATION_MS } from '../../src/model/duration.js';

const config = (sections: LoadedConfig['sections']): LoadedConfig => ({ path: '/home/me/config.yaml', exists: true, sections });
const problem = (sections: LoadedConfig['sections'], name: 'run' | 'serve'): string => {
  try {
    commandSection(config(sections), name);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('commandSection', () => {
  test('run: durations as people write them, counts as integers; empty keys are not set', () => {
    expect(commandSection(config({ run: { timeout: '10m', heartbeat_timeout: 30000, retries: 2, ask_timeout: null } }), 'run')).toEqual({
      timeout: 600_000,
      heartbeat_timeout: 30_000,
      retries: 2,
    });
    expect(commandSection(config({}), 'run')).toEqual({});
  });

  test('serve: every key the hub and `serve` read, typed', () => {
    const serve = {
      port: 8977,
      data_dir: '/d',
      concurrency: 4,
      history_limit: 50,
      agent_cpu: 'full',
      keep_token: true,
      redis: 'redis://h',
      queue: 'q',
      timeout: '2h',
      heartbeat_timeout: 0,
    };
    expect(commandSection(config({ serve }), 'serve')).toEqual({ ...serve, timeout: 7_200_000 });
  });

  test('a wrong value is one line naming the key', () => {
    expect(problem({ run: { timeout: 'soon' } }, 'run')).toBe(
      '/home/me/config.yaml: run.timeout must be a duration such as 90s, 10m, 2h (or milliseconds), got "soon"',
    );
    expect(problem({ run: { retries: 1.5 } }, 'run')).toBe('/home/me/config.yaml: run.retries must be a non-negative integer, got 1.5');
    expect(problem({ serve: { port: 70000 } }, 'serve')).toBe(
      '/home/me/config.yaml: serve.port must be an integer from 0 to 65535, got 70000',
    );
    expect(problem({ serve: { concurrency: 0 } }, 'serve')).toBe(
      '/home/me/config.yaml: serve.concurrency must be a positive integer, got 0',
    );
    expect(problem({ serve: { keep_token: 'yes' } }, 'serve')).toBe('/home/me/config.yaml: serve.keep_token must be a boolean, got "yes"');
    expect(problem({ run: { ask_timeout: MAX_DURATION_MS + 1 } }, 'run')).toMatch(
      /^\/home\/me\/config\.yaml: `run\.ask_timeout` is 2147483648 ms, more than the 2147483647 ms .* a timer can hold; use 0 for no limit$/,
    );
  });

  test('an unknown key is refused with the keys the section takes (it was silently ignored)', () => {
    expect(problem({ run: { timout: '10m' } }, 'run')).toBe(
      '/home/me/config.yaml: unknown key "run.timout" (expected timeout, heartbeat_timeout, retries, ask_timeout)',
    );
    expect(problem({ serve: { ports: 1 } }, 'serve')).toMatch(
      /^\/home\/me\/config\.yaml: unknown key "serve\.ports" \(expected port, data_dir, /,
    );
  });
});

describe('serve, through the real CLI', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-sections-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const serve = (yaml: string, args: string[] = []) => {
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(file, yaml, { mode: 0o600 });
    return spawnSync(process.execPath, ['bin/backchannel.js', 'serve', ...args], {
      env: { ...process.env, BACKCHANNEL_CONFIG: file, XDG_STATE_HOME: path.join(dir, 'state'), XDG_CONFIG_HOME: path.join(dir, 'cfg') },
      encoding: 'utf8',
      timeout: 30_000,
    });
  };

  test('a port out of range in the file names serve.port, not --port; an unknown key stops it', () => {
    const wrong = serve('serve:\n  port: 70000\n');
    expect(wrong.status).toBe(1);
    expect(wrong.stderr.trim()).toBe(
      `backchannel serve: ${path.join(dir, 'config.yaml')}: serve.port must be an integer from 0 to 65535, got 70000`,
    );
    const unknown = serve('serve:\n  prot: 8080\n');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('unknown key "serve.prot" (expected port, data_dir,');
  });

  test('the command line wins over the file: a wrong flag is its usage error even when the file sets the key', () => {
    const flag = serve('serve:\n  concurrency: 4\n', ['--concurrency', '0']);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain('Expected `--concurrency` to be a positive integer, got `0`');
  });
});
