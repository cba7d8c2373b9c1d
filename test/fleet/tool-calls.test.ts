/**
 * The Python SDK's `task.call_tool` end to end where it runs for real: under a hub (its control
 * endpoint, answered through the one client) and through a fleet worker (a real `backchannel worker`
 * and redis-server: the call and its result cross Redis). The TypeScript SDK's agent through the
 * fleet too, with parallel calls, cancel while waiting, and a caller annotating the task (`TaskRun.annotate`).
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { redisQueue } from '../../src/fleet/index.js';
import { clientOf, openClient, type BackchannelClient, type TaskRun } from '../../src/client/index.js';
import type { TaskBroker } from '../../src/broker/index.js';
import type { PendingToolCall, ToolDefinition } from '../../src/model/task.js';
import { TaskError } from '../../src/broker/errors.js';
import { createTestBroker, fixture, settle, waitFor, type TestBroker } from '../helpers/core.js';
import { startTestHeadless, type TestHeadless } from '../helpers/panel.js';
import { REDIS_MISSING, startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorker, type WorkerProcess } from './workers.js';

const PYTHON_AGENT = fixture('python/tool_caller.py');
const TS_AGENT = fixture('tool-caller.mjs');
const READ: ToolDefinition = { name: 'Read', description: 'Reads a file', input_schema: { type: 'object' } };
const WRITE: ToolDefinition = { name: 'Write', input_schema: { type: 'object' } };

/** The calls `task` waits on, once `count` wait. */
function waiting(snapshot: () => { pendingToolCalls?: PendingToolCall[] } | undefined, count: number): Promise<PendingToolCall[]> {
  return waitFor(() => {
    const calls = snapshot()?.pendingToolCalls;
    return calls?.length === count ? calls : undefined;
  }, `${count} tool call(s) to wait`).catch((error: Error) => {
    throw new Error(`${error.message}: ${JSON.stringify(snapshot())}`);
  });
}

describe('the Python SDK calls a tool under a hub', () => {
  let hub: TestHeadless;
  let client: BackchannelClient;
  beforeAll(async () => {
    // The suite's own directory (a test's tempDir() is removed after that test).
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bc-tc-py-'));
    const control = path.join(dir, 'run', 'control.sock');
    hub = await startTestHeadless({ dir, control });
    client = await openClient({ withoutHub: 'refuse', env: { ...process.env, BACKCHANNEL_CONTROL: control } });
  });
  afterAll(async () => {
    await client?.close();
    await hub?.stop();
  });

  test('two calls from two threads wait at once; content and error reach their own call', async () => {
    const calls = [
      { name: 'Read', arguments: { path: 'a.txt' } },
      { name: 'Write', arguments: { path: 'b.txt', content: 'B' } },
    ];
    const task: TaskRun = await client.run({ command: 'python3', args: [PYTHON_AGENT], input: { calls }, tools: [READ, WRITE] });
    const pending = await waiting(() => task.snapshot(), 2);
    const byName = new Map(pending.map((c) => [c.name, c]));
    expect(byName.get('Write')?.arguments).toEqual({ path: 'b.txt', content: 'B' });
    await task.answerToolCall(byName.get('Write')!.callId, { error: 'read-only file system' });
    await task.answerToolCall(byName.get('Read')!.callId, { content: 'contenu de a ✓' });
    expect((await task.result).data).toEqual({
      offered: ['Read', 'Write'],
      results: [{ content: 'contenu de a ✓' }, { error: 'tool call Write failed: read-only file system' }],
    });
  });

  test('a 10 MB result arrives whole, and a call that gets no result within its timeout raises', async () => {
    const big = await client.run({
      command: 'python3',
      args: [PYTHON_AGENT],
      input: { calls: [{ name: 'Read' }], digest: true },
      tools: [READ],
    });
    const [call] = await waiting(() => big.snapshot(), 1);
    const content = 'grüße 🙂\n'.repeat(1024 * 1024);
    await big.answerToolCall(call!.callId, { content });
    const sha256 = createHash('sha256').update(content).digest('hex');
    expect((await big.result).data).toMatchObject({ results: [{ content: { bytes: Buffer.byteLength(content), sha256 } }] });

    const late = await client.run({
      command: 'python3',
      args: [PYTHON_AGENT],
      input: { calls: [{ name: 'Read' }], timeout: 0.3 },
      tools: [READ],
    });
    expect((await late.result).data).toEqual({ offered: ['Read'], results: [{ error: 'tool call Read got no result within 0.3 s' }] });
  });
});

describe.skipIf(REDIS_MISSING)(`tool calls through a fleet worker${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`, () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let testBroker: TestBroker;
  let broker: TaskBroker;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedis();
    const queue = `q-${randomUUID().slice(0, 8)}`;
    testBroker = createTestBroker({ queue: redisQueue({ redis: redis.url, name: queue }) }, { scope: 'manual' });
    broker = testBroker.broker;
    dir = mkdtempSync(path.join(os.tmpdir(), 'bc-tc-w-'));
    const ipcDir = path.join(dir, 'ipc');
    worker = await startWorker(redis.url, {
      queue,
      name: `${queue}-w1`,
      allow: [`python3 ${PYTHON_AGENT}`, `${process.execPath} ${TS_AGENT}`],
      ipcDir,
      concurrency: 4,
    });
  });
  afterAll(async () => {
    await testBroker?.close();
    await worker?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  test("the Python SDK's call crosses Redis to the broker, and its result crosses back", async () => {
    const handle = broker.submit({
      command: 'python3',
      args: [PYTHON_AGENT],
      input: { calls: [{ name: 'Read', arguments: { path: 'a.txt' } }] },
      tools: [READ],
    });
    const [call] = await waiting(() => broker.get(handle.id), 1);
    expect(broker.get(handle.id)?.worker).toBe(worker.name);
    expect(call!.arguments).toEqual({ path: 'a.txt' });
    expect(broker.answerToolCall(handle.id, call!.callId, { content: { lines: ['a', 'b'] } })).toBe(true);
    expect((await handle.result).data).toEqual({ offered: ['Read'], results: [{ content: { lines: ['a', 'b'] } }] });
  });

  test("the TypeScript SDK's parallel calls are answered across Redis, a 10 MB result whole", async () => {
    const handle = broker.submit({
      command: process.execPath,
      args: [TS_AGENT],
      input: { calls: [{ name: 'Read' }, { name: 'Write' }], digest: true },
      tools: [READ, WRITE],
    });
    const [read, write] = await waiting(() => broker.get(handle.id), 2);
    const content = 'x✓'.repeat(5 * 1024 * 1024);
    expect(broker.answerToolCall(handle.id, write!.callId, { error: 'denied' })).toBe(true);
    expect(broker.answerToolCall(handle.id, read!.callId, { content })).toBe(true);
    const sha256 = createHash('sha256').update(content).digest('hex');
    expect((await handle.result).data).toEqual({
      offered: ['Read', 'Write'],
      results: [{ content: { bytes: Buffer.byteLength(content), sha256 } }, { error: 'tool call Write failed: denied' }],
    });
  });

  test("a caller's annotations of a task running on a worker reach its final meta (the broker writes it, not the worker)", async () => {
    const task = await clientOf(broker).run({
      command: process.execPath,
      args: [TS_AGENT],
      input: { calls: [{ name: 'Read' }] },
      tools: [READ],
    });
    const [call] = await waiting(() => task.snapshot(), 1);
    expect(task.snapshot().worker).toBe(worker.name);
    await task.annotate({ bridge_guard: { violations: 1, corrections: 1, unknown_tools: 0 } });
    expect(broker.get(task.id)?.annotations).toEqual({ bridge_guard: { violations: 1, corrections: 1, unknown_tools: 0 } });
    await task.answerToolCall(call!.callId, { content: 'a' });
    const final = await task.result;
    expect(final.meta).toMatchObject({ bridge_guard: { violations: 1, corrections: 1, unknown_tools: 0 }, attempts: 1 });
    expect(broker.insights().bridgeGuard).toEqual({ violations: 1, corrections: 1, unknown_tools: 0, replays: 0 });
  });

  test('a 40 MB result (past the 32 MB Redis lets a subscriber fall behind) arrives whole, and the worker still hears the next one', async () => {
    const handle = broker.submit({
      command: process.execPath,
      args: [TS_AGENT],
      input: { calls: [{ name: 'Read' }], digest: true },
      tools: [READ],
    });
    const [call] = await waiting(() => broker.get(handle.id), 1);
    const content = 'x✓'.repeat(10 * 1024 * 1024); // 40 MiB of UTF-8, under the 64 MiB a tool result may be
    expect(broker.answerToolCall(handle.id, call!.callId, { content })).toBe(true);
    const sha256 = createHash('sha256').update(content).digest('hex');
    expect((await handle.result).data).toEqual({
      offered: ['Read'],
      results: [{ content: { bytes: Buffer.byteLength(content), sha256 } }],
    });

    // Published whole, it made Redis close the worker's subscription: this answer never arrived.
    const next = broker.submit({ command: process.execPath, args: [TS_AGENT], input: { calls: [{ name: 'Read' }] }, tools: [READ] });
    const [second] = await waiting(() => broker.get(next.id), 1);
    expect(broker.answerToolCall(next.id, second!.callId, { content: 'small' })).toBe(true);
    expect((await next.result).data).toEqual({ offered: ['Read'], results: [{ content: 'small' }] });
  });

  test('cancel reaches an agent waiting on a tool call on a worker', async () => {
    const handle = broker.submit({ command: 'python3', args: [PYTHON_AGENT], input: { calls: [{ name: 'Read' }] }, tools: [READ] });
    await waiting(() => broker.get(handle.id), 1);
    expect(agentRunning(PYTHON_AGENT)).toBe(true);
    broker.cancel(handle.id, 'the caller went away');
    const outcome = await settle(handle.result);
    expect(!outcome.ok && TaskError.is(outcome.error) && outcome.error.reason).toBe('cancelled');
    await handle.finished;
    expect(broker.get(handle.id)?.pendingToolCalls).toBeUndefined();
    // The worker's agent process is gone: its pid was the worker's, so look for the agent by its command line.
    await waitFor(() => !agentRunning(PYTHON_AGENT), 'the agent process to exit');
  });
});

/** True while a Python process runs `script` (Linux /proc; the worker's own `--allow` names it too). */
function agentRunning(script: string): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0] ?? '').startsWith('python') && argv[1] === script) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}
