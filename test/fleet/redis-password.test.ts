/**
 * Issue 23 item 10, real redis-server with a password: the worker's Redis password never stands on
 * its command line (where `ps` and /proc/<pid>/cmdline show it to every user). `--redis` with a
 * password is refused, saying where to put it; REDIS_PASSWORD (or the whole URL in
 * BACKCHANNEL_REDIS_URL) is taken instead, never printed, and never passed on to a sub-agent.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redisQueue } from '../../src/fleet/index.js';
import { createTestBroker, tempDir } from '../helpers/core.js';
import { outputOf, REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { BIN, fleetFixture } from './workers.js';

const SECRET = 'pa55-' + randomUUID();
const AGENT = fleetFixture('env-names.mjs');

describe.skipIf(REDIS_MISSING)(`the worker's Redis password${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    redis = await startRedis(['--requirepass', SECRET]);
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await redis?.stop();
  });

  test('in --redis it is refused (exit 2), saying where to give it, without printing it', () => {
    const withPassword = `redis://:${SECRET}@127.0.0.1:${redis.port}`;
    const result = spawnSync(process.execPath, [BIN, 'worker', '--redis', withPassword, '--allow', `node ${AGENT}`], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'is visible to every user of this machine (ps); give it in REDIS_PASSWORD, or the whole URL in BACKCHANNEL_REDIS_URL',
    );
    expect(result.stderr + result.stdout).not.toContain(SECRET);
    const serve = spawnSync(process.execPath, [BIN, 'serve', '--redis', withPassword], {
      encoding: 'utf8',
      env: { ...process.env, XDG_STATE_HOME: tempDir() },
    });
    expect(serve.status).toBe(2);
    expect(serve.stderr + serve.stdout).not.toContain(SECRET);
  });

  test.each([
    ['REDIS_PASSWORD', (port: number) => ({ args: ['--redis', `redis://127.0.0.1:${port}`], env: { REDIS_PASSWORD: SECRET } })],
    ['BACKCHANNEL_REDIS_URL', (port: number) => ({ args: [], env: { BACKCHANNEL_REDIS_URL: `redis://:${SECRET}@127.0.0.1:${port}` } })],
  ] as const)(
    "from %s: the worker connects and runs a task; the password is in neither its command line, its output nor the agent's environment",
    async (_name, given) => {
      const queue = `q-${randomUUID().slice(0, 8)}`;
      const { args, env } = given(redis.port);
      const child = spawn(process.execPath, [BIN, 'worker', ...args, '--queue', queue, '--name', queue, '--allow', `node ${AGENT}`], {
        env: { ...process.env, CURSOR_IPC_DIR: path.join(tempDir(), 'ipc'), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await outputOf(child, 'taking tasks from', 'the worker to start');
      expect(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).not.toContain(SECRET);
      const test = createTestBroker(
        { queue: redisQueue({ redis: `redis://:${SECRET}@127.0.0.1:${redis.port}`, name: queue }) },
        { scope: 'manual' },
      );
      try {
        const task = test.broker.submit({ command: 'node', args: [AGENT] });
        const payload = await task.result;
        expect(payload.data).toEqual({ redisPassword: null, redisUrl: null });
      } finally {
        await test.close();
      }
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      expect(out).toContain(`taking tasks from redis://:***@127.0.0.1:${redis.port}`);
      expect(out).not.toContain(SECRET);
    },
  );
});
