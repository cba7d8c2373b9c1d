/**
 * What a fleet worker runs is what its owner allowed, judged on the effective command line (real
 * redis-server, real `backchannel worker` processes): a job cannot make an allowed template start
 * another program, `--presets <dir>` allows only what that directory holds, a job naming a preset
 * runs that very preset, and a refusal is a task failed as `refused`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RunPolicy } from '../../src/broker/run-policy.js';
import { redisQueue } from '../../src/fleet/index.js';
import { presetRule } from '../../src/hub/run-policy.js';
import { loadPresets } from '../../src/templates/presets.js';
import { createTestBroker, ROOT, settle, tempDir, type TestBroker } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorker, type WorkerProcess } from './workers.js';

const CURSOR_AGENT = path.join(ROOT, 'templates', 'cursor-cli', 'agent.mjs');
const CLAUDE_AGENT = path.join(ROOT, 'templates', 'claude-code', 'agent.mjs');

/** A templates directory of our own: `a` and `b`, both run as `node agent.mjs`, each answering with its directory's name. */
function ownTemplates(): string {
  const dir = tempDir('bc-tpl-');
  for (const name of ['a', 'b']) {
    fs.mkdirSync(path.join(dir, name));
    const manifest = { name, description: `template ${name}`, run: ['node', 'agent.mjs'] };
    fs.writeFileSync(path.join(dir, name, 'template.json'), JSON.stringify(manifest));
    // The stdout fallback channel: no SDK import, so it runs from any directory.
    fs.writeFileSync(
      path.join(dir, name, 'agent.mjs'),
      `const id = process.argv.at(-1).slice('--task-id='.length);
const payload = { task_id: id, status: 'success', data: { template: ${JSON.stringify(name)}, cwd: process.cwd() }, meta: { timestamp: new Date().toISOString() } };
process.stdout.write('data: ' + JSON.stringify(payload) + '\\n\\n');
`,
    );
  }
  return dir;
}

/** A program that leaves a mark if it ever runs. */
function evilProgram(): { path: string; mark: string } {
  const dir = tempDir('bc-evil-');
  const mark = path.join(dir, 'ran');
  const file = path.join(dir, 'evil.sh');
  fs.writeFileSync(file, `#!/bin/sh\necho "$@" > '${mark}'\n`, { mode: 0o755 });
  return { path: file, mark };
}

describe.skipIf(REDIS_MISSING)(`a worker's allow-list${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  const workers: WorkerProcess[] = [];
  const brokers: TestBroker[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(brokers.map((b) => b.close()));
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
  }, 60_000);

  /** A broker on a fresh queue (naming presets by `policy`, as a hub does) and one worker with `workerArgs`. */
  async function fleet(workerArgs: { allow?: string[]; presets?: string; legacyTemplatesFlag?: boolean }, policy?: RunPolicy) {
    const queue = `q-${randomUUID().slice(0, 8)}`;
    const testBroker = createTestBroker(
      { queue: redisQueue({ redis: redis.url, name: queue }), ...(policy ? { runPolicy: policy } : {}) },
      { scope: 'manual' },
    );
    brokers.push(testBroker);
    const worker = await startWorker(redis.url, {
      queue,
      name: `${queue}-w`,
      allow: workerArgs.allow ?? [],
      ...(workerArgs.presets ? { presets: workerArgs.presets, legacyTemplatesFlag: workerArgs.legacyTemplatesFlag } : {}),
      ipcDir: path.join(tempDir('bc-w-'), 'ipc'),
    });
    workers.push(worker);
    return testBroker.broker;
  }

  test('a job for an allowed template cannot name the program the template starts, nor add arguments to it', async () => {
    const broker = await fleet({ allow: [`node ${CURSOR_AGENT}`, `node ${CLAUDE_AGENT}`] });
    const evil = evilProgram();
    // What anyone who can write to the queue sends: the allowed command line, the program in the input.
    const cursor = await settle(broker.submit({ command: 'node', args: [CURSOR_AGENT], input: { prompt: 'hi', bin: evil.path } }).result);
    const claude = await settle(
      broker.submit({
        command: 'node',
        args: [CLAUDE_AGENT],
        input: { prompt: 'hi', bin: evil.path, permission_mode: 'bypassPermissions', extra_args: ['--x'] },
      }).result,
    );
    expect(fs.existsSync(evil.mark)).toBe(false);
    for (const [outcome, variable] of [
      [cursor, 'CURSOR_AGENT_BIN'],
      [claude, 'CLAUDE_BIN'],
    ] as const) {
      expect(outcome.ok).toBe(false);
      expect(outcome.ok === false && outcome.error.reason).toBe('error');
      expect(outcome.ok === false && outcome.error.message).toContain(
        `input "bin" is not accepted: only the owner sets it, as ${variable}`,
      );
    }
  });

  test('--presets <dir> allows what the directory holds and nothing else: a shipped template is refused as `refused`', async () => {
    const dir = ownTemplates();
    // The broker knows the shipped templates and names the job after one of them.
    const broker = await fleet({ presets: dir }, new RunPolicy(loadPresets(tempDir('bc-none-')).map(presetRule)));
    const outcome = await settle(broker.submit({ command: 'node', args: [CURSOR_AGENT], input: { prompt: 'hi' } }).result);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok === false && outcome.error.reason).toBe('refused');
    expect(outcome.ok === false && outcome.error.message).toMatch(
      /refuses `node .*cursor-cli\/agent\.mjs`: not an allowed command \(nor does this worker hold preset "cursor-cli"\)/,
    );
  });

  test('a job naming a preset runs that preset, in its own directory (not the first template run as `node agent.mjs`)', async () => {
    const dir = ownTemplates();
    const presets = loadPresets(tempDir('bc-none-'), undefined, dir);
    const broker = await fleet({ presets: dir }, new RunPolicy(presets.map(presetRule)));
    const b = presets.find((p) => p.name === 'b')!;
    expect(b.request.args).toEqual([path.join(dir, 'b', 'agent.mjs')]);
    const payload = await broker.submit({ command: 'node', args: ['agent.mjs'], cwd: path.join(dir, 'b') }).result;
    expect(payload.data).toEqual({ template: 'b', cwd: fs.realpathSync(path.join(dir, 'b')) });
  });

  test('--templates <dir>, the old name of --presets, still allows what the directory holds, and says so in one line', async () => {
    const dir = ownTemplates();
    const presets = loadPresets(tempDir('bc-none-'), undefined, dir);
    const broker = await fleet({ presets: dir, legacyTemplatesFlag: true }, new RunPolicy(presets.map(presetRule)));
    const payload = await broker.submit({ command: 'node', args: ['agent.mjs'], cwd: path.join(dir, 'a') }).result;
    expect(payload.data).toEqual({ template: 'a', cwd: fs.realpathSync(path.join(dir, 'a')) });
    const notices = workers
      .at(-1)!
      .output()
      .split('\n')
      .filter((line) => line.includes('deprecated'));
    expect(notices).toEqual(['backchannel worker: `--templates` is deprecated; use `--presets <dir>` (the same directory)']);
  });

  test('an exact command line needs an --allow prefix; a refusal fails the task as `refused` and says how to allow it', async () => {
    const broker = await fleet({ allow: [`node ${path.join(ROOT, 'test/fleet/fixtures/steps.mjs')}`] });
    const outcome = await settle(broker.submit({ command: 'sh', args: ['-c', 'echo pwned'] }).result);
    expect(outcome.ok === false && outcome.error.reason).toBe('refused');
    expect(outcome.ok === false && outcome.error.message).toMatch(/refuses `sh -c echo pwned`: not an allowed command.*--allow/);
    expect(broker.tasks().at(-1)).toMatchObject({ state: 'failed', reason: 'refused' });
  });
});
