/**
 * The partial-delivery contract end to end through the fleet, all real processes: a redis-server,
 * `backchannel serve --redis` as the hub, one `backchannel worker` allowed to run the gateway's
 * model, and `backchannel gateway` on that hub (found through BACKCHANNEL_CONTROL). A model that
 * streams many text deltas as fast as it can runs on the worker; the client's SSE stream carries
 * every delta, whole and in order: agent → worker → Redis → hub → control stream → gateway → SSE.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { tempDir, waitFor } from '../helpers/core.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { cli, hubEnv, printed, start, type Proc } from '../hub/control/hub-process.js';
import { raw, userMessage, type RawResponse } from '../gateway/helpers.js';
import { fleetFixture, startWorker, type WorkerProcess } from './workers.js';

const MODEL = fleetFixture('gateway-deltas.mjs');
const COUNT = 1000;

/** What this test started, stopped after it (by the handles we hold, never by name). */
let redis: TestRedis | undefined;
let worker: WorkerProcess | undefined;
const procs: Proc[] = [];
const recordDirs: string[] = [];

/** SIGTERM, up to 10 s to exit, then SIGKILL (and up to 5 s more). */
async function stopProc(proc: Proc): Promise<void> {
  const { child } = proc;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = (ms: number) => Promise.race([proc.exited.then(() => true), new Promise((r) => setTimeout(() => r(false), ms).unref())]);
  child.kill('SIGTERM');
  if (await exited(10_000)) return;
  child.kill('SIGKILL');
  await exited(5_000);
}

afterEach(async () => {
  // Gateway first, then the hub, the worker, Redis: each front-end goes before what it uses.
  for (const proc of procs.splice(0).reverse()) await stopProc(proc);
  await worker?.stop();
  worker = undefined;
  await redis?.stop();
  redis = undefined;
  // Any stand-in still running (it should have ended with its task): by the pid it recorded, if still ours.
  for (const dir of recordDirs.splice(0)) {
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith('.json')) : []) {
      const { pid } = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as { pid: number };
      try {
        if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('gateway-deltas.mjs')) process.kill(pid, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  }
}, 60_000);

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)),
  );
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function tasksOf(env: NodeJS.ProcessEnv): Promise<TaskSnapshot[]> {
  const { code, stdout, stderr } = await within(cli(['tasks', '--json', '--limit', '100'], env), 20_000, '`backchannel tasks --json`');
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as TaskSnapshot[];
}

describe.skipIf(REDIS_MISSING)(`the gateway on a hub with a worker fleet${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  test(`${COUNT} text deltas streamed by a model on a worker reach the SSE client, every one, in order, whole`, async () => {
    const t0 = Date.now();
    redis = await startRedis();
    const queue = `q-${randomUUID().slice(0, 8)}`;
    const hub = hubEnv();

    const serve = start(['serve', '--redis', redis.url, '--queue', queue, '--data-dir', path.join(hub.dir, 'data')], hub.env);
    procs.push(serve);
    await printed(serve, /Backchannel panel: (\S+)/, 'serve --redis to print its URL');
    // It says it runs tasks on the fleet, naming the queue (a password in the URL would be redacted).
    await printed(
      serve,
      new RegExp(`Fleet mode: tasks run on \`backchannel worker\`s through redis://\\S+, (queue ${queue})`),
      'the fleet-mode line',
    );

    const workerName = `${queue}-w1`;
    worker = await startWorker(redis.url, {
      queue,
      name: workerName,
      allow: [MODEL],
      ipcDir: path.join(hub.dir, 'worker-ipc'),
      concurrency: 1,
    });

    const gwDir = tempDir('bc-gw-fleet-');
    const records = path.join(gwDir, 'records');
    fs.mkdirSync(records);
    recordDirs.push(records);
    const config = path.join(gwDir, 'gateway.yaml');
    fs.writeFileSync(
      config,
      JSON.stringify({ port: 0, auth: 'none', default_model: 'deltas', models: { deltas: { command: MODEL, args: [records] } } }),
    );
    const gateway = start(['gateway', '--config', config], hub.env);
    procs.push(gateway);
    const baseURL = await printed(gateway, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
    expect(gateway.stdout()).toContain(`Tasks run on the hub at ${hub.socket}`);
    const ready = Date.now();

    const res: RawResponse = await within(
      raw(`${baseURL}/chat/completions`, { model: 'deltas', stream: true, messages: userMessage(`deltas ${COUNT}`) }),
      45_000,
      'the streamed answer',
    );
    const answered = Date.now();
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    const id = res.headers['x-backchannel-task-id'] as string;
    expect(id).toBeTruthy();

    // The agent's own record of what it sent.
    const record = JSON.parse(fs.readFileSync(path.join(records, `${id}.json`), 'utf8')) as { deltas: string[]; text: string };
    expect(record.deltas).toHaveLength(COUNT);

    // The stream: the role chunk, one content chunk per delta, the stop chunk, [DONE]; no error event.
    expect(res.events.at(-1)?.data).toBe('[DONE]');
    const chunks = res.events.filter((e) => e.data !== '[DONE]');
    expect(chunks.filter((e) => e.data.error !== undefined)).toEqual([]);
    expect(chunks[0]!.data.choices[0].delta.role).toBe('assistant');
    expect(chunks.at(-1)!.data.choices[0].finish_reason).toBe('stop');
    const contents = chunks.map((e) => e.data.choices?.[0]?.delta?.content).filter((c): c is string => typeof c === 'string' && c !== '');
    const streamed = contents.join('');
    expect(streamed.length, 'streamed text length vs the agent’s').toBe(record.text.length);
    expect(streamed).toBe(record.text);
    // Every delta present as its own chunk, in order (a lost tail would come as one extra chunk from
    // the final text, a merged run as fewer chunks): the chunks are exactly the agent's deltas.
    const missing = record.deltas.length - contents.length;
    expect(missing, `${missing} of ${COUNT} deltas missing or merged`).toBe(0);
    expect(contents).toEqual(record.deltas);

    // It ran on the worker, as the hub's task list says, as the gateway's task.
    const task = await waitFor(
      async () => (await tasksOf(hub.env)).find((t) => t.id === id && t.state === 'succeeded'),
      'the hub to list the task as succeeded',
      20_000,
      100,
    );
    expect(task).toMatchObject({ worker: workerName, tags: { source: 'gateway', model: 'deltas', api: 'chat', stream: 'true' } });
    console.log(
      `gateway-deltas: ${COUNT} deltas, ${streamed.length} chars; set-up ${ready - t0} ms, request ${answered - ready} ms ` +
        `(first content chunk ${Math.round(chunks[1]!.at - chunks[0]!.at)} ms after the role chunk, last ${Math.round(chunks.at(-1)!.at - chunks[0]!.at)} ms)`,
    );
  }, 120_000);
});
