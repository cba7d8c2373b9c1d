import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { TaskError } from '../../src/broker/index.js';
import { locateTask } from '../../src/agent-runtime/locate.js';
import { fixture, makeBroker, settle } from '../helpers/core.js';

describe('agent runtime SDK', () => {
  test('reads the task id from argv before the environment, and fails loudly without one', () => {
    expect(locateTask(['node', 'a.js', '--task-id=from-argv'], { CURSOR_TASK_ID: 'from-env' }).taskId).toBe('from-argv');
    expect(locateTask(['node', 'a.js'], { CURSOR_TASK_ID: 'from-env', CURSOR_TASK_ATTEMPT: '3' })).toMatchObject({
      taskId: 'from-env',
      attempt: 3,
    });
    expect(() => locateTask(['node'], {})).toThrow(/No task id.*backchannel run/);
  });

  test('ask() waits for the person and gets the answer', async () => {
    const { broker } = makeBroker();
    const task = broker.submit({ command: fixture('asker.mjs') });
    await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'ask' && resolve()));
    const question = task.snapshot().pendingQuestion!;
    expect(question).toMatchObject({ question: 'Which branch should I use?', choices: ['main', 'dev'] });
    expect(broker.answer(task.id, 'wrong-id', 'x')).toBe(false);
    expect(broker.answer(task.id, question.askId, 'dev')).toBe(true);
    expect((await task.result).data).toEqual({ answer: 'dev' });
  });

  test('an unanswered question fails after the ask timeout with a clear error', async () => {
    const { broker } = makeBroker({ askTimeoutMs: 300 });
    const task = broker.submit({ command: fixture('asker.mjs') });
    const data = (await task.result).data as { unanswered: string };
    expect(data.unanswered).toMatch(/no answer: nobody answered within 300 ms/);
    expect(task.snapshot().pendingQuestion).toBeUndefined();
  });

  test('cancel fires the AbortSignal and the agent reports cancelled itself', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 5000 });
    const task = broker.submit({ command: fixture('cancellable.mjs') });
    await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'partial' && resolve()));
    task.cancel('user changed their mind');
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('cancelled');
    await task.finished;
    // The agent exited by itself well within the grace period, not by SIGKILL.
    expect(task.snapshot().signal).toBeNull();
    expect(task.snapshot().exitCode).toBe(130);
  });

  test('task.sleep() waits its time, and a cancel ends it at once with a cancelled payload', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 30_000 });
    const done = broker.submit({ command: fixture('sleeper.mjs'), input: { ms: 300 } });
    expect(((await done.result).data as { slept: number }).slept).toBeGreaterThanOrEqual(300);
    const task = broker.submit({ command: fixture('sleeper.mjs'), input: { ms: 600_000 } });
    await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'partial' && resolve()));
    task.cancel('enough');
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('cancelled');
    await task.finished;
    // The agent confirmed by itself (the grace is 30 s, the sleep 10 min): no signal was needed.
    expect(task.snapshot().signal).toBeNull();
    expect(task.snapshot().exitCode).toBe(130);
  });

  test('a question still waiting when the task is cancelled rejects, so the agent ends by itself', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 5000 });
    const task = broker.submit({ command: fixture('asker.mjs') });
    await new Promise<void>((resolve) => task.on('update', (u) => u.kind === 'ask' && resolve()));
    task.cancel('no time for questions');
    expect(((await settle(task.result)) as { error: TaskError }).error.reason).toBe('cancelled');
    await task.finished;
    // ask() threw, the handler caught it and returned, runAgent sent `cancelled` and the agent exited by itself
    // (a question left waiting would hang the handler until the SIGTERM after the 5 s grace period).
    expect(task.snapshot()).toMatchObject({ signal: null, exitCode: 0 });
  });

  test('close() delivers every partial still held back by a full socket before it closes, to a broker that reads slowly', async () => {
    const { broker } = makeBroker();
    const count = 5000; // 10 MB of partials: far more than the socket buffer holds
    const task = broker.submit({ command: fixture('close-after-flood.mjs'), input: { count } });
    let received = 0;
    task.on('update', (u) => {
      if (u.kind !== 'partial') return;
      received += 1;
      // A busy broker: 0.4 ms per partial, so draining what the agent wrote takes about 2 s after its close().
      const until = performance.now() + 0.4;
      while (performance.now() < until);
    });
    expect(((await settle(task.result)) as { error: TaskError }).error.reason).toBe('crashed');
    expect(received).toBe(count);
  });

  test('with an unreachable socket the SDK falls back to stdout', async () => {
    const { broker } = makeBroker();
    // A wrapper breaks the hand-off path before starting the SDK agent, as a hostile framework might.
    const script = `process.env.CURSOR_IPC_PATH = '/nonexistent/dir/x.sock'; await import(${JSON.stringify(fixture('sdk-progress.mjs'))});`;
    const task = broker.submit({ command: 'node', args: ['--input-type=module', '-e', script], cwd: fixture('.'), taskIdArg: false });
    const progress: number[] = [];
    task.on('update', (u) => u.kind === 'partial' && progress.push(u.progress!));
    const result = await task.result;
    expect(result).toMatchObject({ status: 'success', data: { echo: null }, meta: { channel: 'stdout' } });
    expect(progress).toEqual([10, 50, 90]);
    await task.finished;
    expect(broker.logOf(task.id).some((l) => l.text.includes('reporting on stdout instead'))).toBe(true);
  });

  test('heartbeats are sent at the interval the broker asks for, so a quiet agent is not stalled', async () => {
    const { broker } = makeBroker();
    const script = `
      import { runAgent } from 'backchannel-agents/agent-runtime';
      const interval = process.env.CURSOR_HEARTBEAT_MS;
      runAgent(async () => { await new Promise((r) => setTimeout(r, 4000)); return interval; });`;
    const task = broker.submit({
      command: 'node',
      args: ['--input-type=module', '-e', script],
      cwd: fixture('.'),
      taskIdArg: false,
      heartbeatTimeoutMs: 3000,
    });
    expect((await task.result).data).toBe('1000');
  });

  test('an error carries its structured data, and child processes do not inherit the hand-off token', async () => {
    const { broker } = makeBroker();
    const script = `
      import { execFileSync } from 'node:child_process';
      import { runAgent } from 'backchannel-agents/agent-runtime';
      runAgent(async () => {
        const inherited = execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.env.CURSOR_IPC_TOKEN))']).toString();
        throw Object.assign(new Error('tool failed'), { data: { exit_code: 7, inherited }, retryable: false });
      });`;
    const task = broker.submit({ command: 'node', args: ['--input-type=module', '-e', script], cwd: fixture('.'), taskIdArg: false });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.payload?.data).toMatchObject({ message: 'tool failed', exit_code: 7, inherited: 'undefined' });
  });

  test('starts light: the bundle imports only node:net up front, and an agent that reports over the socket alone makes no stdout or stderr stream', async () => {
    // What every agent start pays for (docs/performance.md, issue 27): node:fs, node:path and node:buffer are
    // looked up when a payload is spooled or a big line decoded, stdout and stderr when something writes to them.
    const bundle = readFileSync(new URL('../../dist/agent-runtime/bundle.js', import.meta.url), 'utf8');
    const imported = [...bundle.matchAll(/\bimport\s*(?:\{[^}]*\}\s*from\s*)?"([^"]+)"/g)].map((m) => m[1]);
    expect(imported).toEqual(['node:net']);
    const { broker } = makeBroker();
    const script = `
      import { runAgent } from 'backchannel-agents/agent-runtime';
      runAgent(async () => process._getActiveHandles().filter((h) => h.fd === 1 || h.fd === 2).length);`;
    const task = broker.submit({ command: 'node', args: ['--input-type=module', '-e', script], cwd: fixture('.'), taskIdArg: false });
    expect((await task.result).data).toBe(0);
    // Once written to, they are guarded as before (test/reliability/sdk-outlives-broker.test.ts: EPIPE costs a channel, not the agent).
    const writes = `
      import { runAgent } from 'backchannel-agents/agent-runtime';
      console.log('early, before runAgent');
      runAgent(async (task) => {
        task.log('a log line');
        return process._getActiveHandles().filter((h) => (h.fd === 1 || h.fd === 2) && h.listenerCount('error') > 0).length;
      });`;
    const writer = broker.submit({ command: 'node', args: ['--input-type=module', '-e', writes], cwd: fixture('.'), taskIdArg: false });
    expect((await writer.result).data).toBe(2);
  });
});
