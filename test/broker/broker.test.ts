import { createConnection } from 'node:net';
import { describe, expect, test, vi } from 'vitest';
import { TaskError, type TaskUpdate } from '../../src/broker/index.js';
import { fixture, leftovers, makeBroker, settle, isAlive, waitUntilGone } from '../helpers/core.js';

describe('TaskBroker delivery', () => {
  test('success with partials in order and the input echoed back', async () => {
    // The agent exits by itself after its result; the short test drain (300 ms) would SIGTERM it on a
    // busy machine before it got there, and the exit code checked below would be null.
    const { broker, ipcDir } = makeBroker({ drainMs: 60_000 });
    const task = broker.submit({ command: fixture('sdk-progress.mjs'), input: { question: 'what is 6×7?', 中文: '你好' } });
    const progress: number[] = [];
    const kinds: string[] = [];
    task.on('update', (u: TaskUpdate) => {
      kinds.push(u.kind);
      if (u.kind === 'partial') progress.push(u.progress!);
    });
    const result = await task.result;
    expect(progress).toEqual([10, 50, 90]);
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ echo: { question: 'what is 6×7?', 中文: '你好' }, attempt: 1 });
    expect(result.meta).toMatchObject({ attempts: 1, channel: 'socket' });
    expect(result.meta?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof result.meta?.duration_ms).toBe('number');
    expect((result as { token?: string }).token).toBeUndefined();
    await task.finished;
    // 'ended' when the result settled, then 'exited' once the process was gone (exit code known).
    expect(kinds.slice(-2)).toEqual(['ended', 'exited']);
    const snap = task.snapshot();
    expect(snap).toMatchObject({ state: 'succeeded', progress: 100, attempt: 1, exitCode: 0 });
    expect(leftovers(ipcDir)).toEqual([]);
  });

  test('no timer of the task outlives it: a process that only ran a task exits right after it (run --local did 1 s later)', async () => {
    // A drain period no other timer uses, so each of its timers can be told apart.
    const drainMs = 54_321;
    const timers: unknown[] = [];
    const cleared = new Set<unknown>();
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const set = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number, ...args: unknown[]) => {
      const timer = realSet(fn, ms, ...args);
      if (ms === drainMs) timers.push(timer);
      return timer;
    }) as typeof setTimeout);
    const clear = vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((timer?: NodeJS.Timeout) => {
      cleared.add(timer);
      realClear(timer);
    }) as typeof clearTimeout);
    try {
      const { broker } = makeBroker({ drainMs });
      const task = broker.submit({ command: fixture('quick.mjs') });
      await task.result;
      await task.finished;
      expect(timers.length).toBeGreaterThan(0);
      expect(timers.filter((timer) => !cleared.has(timer))).toEqual([]);
    } finally {
      set.mockRestore();
      clear.mockRestore();
    }
  });

  test('a 10 MB input and a 10 MB result arrive intact', async () => {
    const { broker } = makeBroker();
    const blob = '🙂'.repeat(1024 * 1024) + 'x'.repeat(6 * 1024 * 1024) + 'THE-END';
    const task = broker.submit({ command: fixture('big-result.mjs'), input: { blob, bytes: 10 * 1024 * 1024 } });
    const result = await task.result;
    const data = result.data as { text: string; received: number; tail: string };
    expect(data.received).toBe(blob.length);
    expect(data.tail).toBe(blob.slice(-16));
    expect(data.text.length).toBe(10 * 1024 * 1024);
    expect(data.text.slice(0, 12)).toBe('abcdefghij你好');
  });

  test('lines split across writes, merged in one write, and split UTF-8 are decoded exactly', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('chunked-writer.mjs') });
    const partials: unknown[] = [];
    task.on('update', (u) => u.kind === 'partial' && partials.push(u.payload?.data));
    const result = await task.result;
    const text = '你好，世界 🌍🚀 naïve café';
    expect(partials).toEqual([{ progress: 10, text }, { progress: 20 }, { progress: 40 }, { progress: 60, text: text.repeat(3) }]);
    expect(result.data).toEqual({ text, emoji: '👩‍💻' });
  });

  test('malformed, foreign and after-final lines are ignored, counted and logged', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('noisy.mjs') });
    const result = await task.result;
    expect(result.data).toEqual({ real: true });
    await task.finished;
    const snap = task.snapshot();
    expect(snap.state).toBe('succeeded');
    expect(snap.counters.malformed).toBeGreaterThanOrEqual(6);
    expect(snap.counters.rejected).toBe(1);
    expect(snap.counters.ignored).toBe(2);
    const log = broker
      .logOf(task.id)
      .map((l) => l.text)
      .join('\n');
    expect(log).toContain('malformed JSON');
    expect(log).toContain('unknown "status"');
    expect(log).toContain('message for task someone-else');
    expect(log).toContain('after the task was decided');
  });

  test('the stdout fallback alone delivers progress and the result; other lines become the log', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('stdout-only.mjs') });
    const progress: number[] = [];
    task.on('update', (u) => u.kind === 'partial' && progress.push(u.progress!));
    const result = await task.result;
    expect(result.data).toEqual({ via: 'stdout', text: '中文 ✓' });
    expect(result.meta?.channel).toBe('stdout');
    expect(progress).toEqual([30, 70]);
    await task.finished;
    const log = broker.logOf(task.id);
    expect(log).toContainEqual(expect.objectContaining({ stream: 'stdout', text: 'plain log line on stdout' }));
    expect(log).toContainEqual(expect.objectContaining({ stream: 'stderr', text: 'a line on stderr' }));
  });

  test('a result sent on both channels counts once', async () => {
    const { broker } = makeBroker();
    const updates: TaskUpdate[] = [];
    broker.on('update', (u) => updates.push(u));
    const task = broker.submit({ command: fixture('both-channels.mjs') });
    expect((await task.result).data).toEqual({ n: 1 });
    await task.finished;
    expect(updates.filter((u) => u.kind === 'ended')).toHaveLength(1);
    expect(task.snapshot().counters.ignored).toBe(1);
  });

  test('a crash fails with the exit code and the tail of stderr', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('crash.mjs') });
    const outcome = await settle(task.result);
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: TaskError }).error;
    expect(TaskError.is(error)).toBe(true);
    expect(error.reason).toBe('crashed');
    expect(error.message).toContain('exited with code 1 without sending a final payload');
    expect(error.stderrTail).toContain('boom: the agent crashed');
    expect(error.stderrTail).toContain('working on item 30');
    expect(error.stderrTail).not.toContain('working on item 1\n');
  });

  test('exiting without a result is a failure, not a hang', async () => {
    const { broker } = makeBroker();
    const outcome = await settle(broker.submit({ command: fixture('exit-silently.mjs') }).result);
    expect(outcome.ok).toBe(false);
    expect((outcome as { error: TaskError }).error).toMatchObject({ reason: 'crashed' });
    expect((outcome as { error: TaskError }).error.message).toContain('exited with code 0 without sending a final payload');
  });

  test('a command that does not exist and a missing working directory fail clearly, without retries', async () => {
    const { broker } = makeBroker();
    const missing = await settle(broker.submit({ command: 'no-such-agent-xyz', retries: 3 }).result);
    expect((missing as { error: TaskError }).error.message).toContain('command not found: no-such-agent-xyz');
    const noCwd = broker.submit({ command: fixture('quick.mjs'), cwd: '/no/such/dir', retries: 3 });
    const outcome = await settle(noCwd.result);
    expect((outcome as { error: TaskError }).error.message).toContain('working directory does not exist: /no/such/dir');
    expect(noCwd.snapshot().attempt).toBe(1);
  });

  test('a grandchild left behind by an agent that exits is killed with the task', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('forks-and-exits.mjs') });
    const { grandchild } = (await task.result).data as { grandchild: number };
    await task.finished;
    await waitUntilGone([grandchild]);
    expect(isAlive(grandchild)).toBe(false);
  });

  test('the sub-agent gets the hand-off environment, argv and a UTF-8 locale', async () => {
    const { broker } = makeBroker();
    const script = `
      const env = process.env;
      process.stdout.write('data: ' + JSON.stringify({ task_id: env.CURSOR_TASK_ID, status: 'success', data: {
        argv: process.argv.slice(1), attempt: env.CURSOR_TASK_ATTEMPT, token: env.CURSOR_IPC_TOKEN,
        path: env.CURSOR_IPC_PATH, lang: env.LANG, electron: env.ELECTRON_RUN_AS_NODE ?? null } }) + '\\n\\n');`;
    const task = broker.submit({
      command: 'node',
      args: ['-e', script, 'x'],
      env: { LANG: undefined, LC_ALL: undefined, LC_CTYPE: undefined },
    });
    const data = (await task.result).data as Record<string, unknown>;
    expect(data.argv).toEqual(['x', `--task-id=${task.id}`]);
    expect(data.attempt).toBe('1');
    expect(data.token).toMatch(/^[0-9a-f]{64}$/);
    expect(String(data.path).startsWith(broker.endpointDir)).toBe(true);
    expect(Buffer.byteLength(String(data.path))).toBeLessThanOrEqual(103);
    expect(data.electron).toBeNull();
  });

  test('--task-id can be turned off per task', async () => {
    const { broker } = makeBroker();
    const script = `process.stdout.write('data: ' + JSON.stringify({ task_id: process.env.CURSOR_TASK_ID, status: 'success', data: process.argv.slice(1) }) + '\\n');`;
    const task = broker.submit({ command: 'node', args: ['-e', script], taskIdArg: false });
    expect((await task.result).data).toEqual([]);
  });

  test('a sender without the token cannot inject a result', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('stubborn.mjs'), args: ['silent'], timeoutMs: 20_000 });
    const pids: number[] = [];
    task.on('update', (u) => u.kind === 'partial' && pids.push(...(u.payload?.data as { pids: number[] }).pids));
    await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'partial' && resolve()));
    const endpoint = (await import('node:fs')).readdirSync(broker.endpointDir).find((n) => n.endsWith('.sock'))!;
    const reply = await new Promise<string>((resolve) => {
      const socket = createConnection(`${broker.endpointDir}/${endpoint}`);
      let text = '';
      socket.on('data', (c) => (text += c));
      socket.on('close', () => resolve(text));
      socket.write(JSON.stringify({ task_id: task.id, status: 'success', data: 'forged', token: 'f'.repeat(64) }) + '\n');
    });
    expect(reply).toContain('"type":"reject"');
    expect(task.snapshot().state).toBe('running');
    expect(task.snapshot().counters.rejected).toBe(1);
    task.cancel();
    expect(await settle(task.result)).toMatchObject({ ok: false, error: { reason: 'cancelled' } });
    await task.finished;
    await waitUntilGone(pids);
  });

  test('with traceLines (BACKCHANNEL_DEBUG=1) every received line is logged, first 100 characters, token redacted', async () => {
    const { broker } = makeBroker({ traceLines: true });
    const socketTask = broker.submit({ command: fixture('quick.mjs'), input: { n: 7 } });
    const stdoutTask = broker.submit({ command: fixture('stdout-only.mjs') });
    await Promise.all([socketTask.result, stdoutTask.result, socketTask.finished, stdoutTask.finished]);
    const socketLog = broker.logOf(socketTask.id).map((l) => l.text);
    expect(socketLog).toContainEqual(expect.stringMatching(/^received via socket: \{"type":"hello",.*"token":"\[redacted\]"/));
    expect(socketLog.join('\n')).not.toMatch(/[0-9a-f]{64}/);
    expect(socketLog).toContainEqual(expect.stringContaining('received via socket: {"task_id"'));
    const stdoutLog = broker.logOf(stdoutTask.id).map((l) => l.text);
    expect(stdoutLog).toContainEqual(expect.stringMatching(/^received via stdout: data: \{"task_id".*"status":"partial"/));
  });
});
