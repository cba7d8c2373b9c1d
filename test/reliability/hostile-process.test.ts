/**
 * Fault table, "hostile processes": agents that close mid-line, ignore cancel, leave grandchildren
 * behind, talk after their result, or cannot start at all. Each ends with a clear reason, a neighbour
 * task is unaffected, and no file or process is left behind.
 */
import { describe, expect, test } from 'vitest';
import type { TaskError } from '../../src/broker/index.js';
import { fixture, isAlive, makeBroker, settle, waitUntilGone } from '../helpers/core.js';
import { expectNothingLeft, hostile } from '../helpers/reliability.js';

function pidsFrom(data: unknown): number[] {
  return (data as { pids: number[] }).pids;
}

describe('hostile processes', () => {
  test('an agent that closes mid-line: the cut line is logged as malformed and the task fails as crashed', async () => {
    const { broker, ipcDir } = makeBroker();
    const neighbour = broker.submit({ command: fixture('quick.mjs'), input: { n: 1 } });
    const task = broker.submit({ command: hostile('closes-mid-line.mjs'), args: ['truncated'] });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('crashed');
    expect(error.message).toContain('exited with code 0 without sending a final payload');
    await task.finished;
    const snap = task.snapshot();
    expect(snap).toMatchObject({ state: 'failed', progress: 60 });
    expect(snap.counters.malformed).toBe(2);
    const log = broker.logOf(task.id).map((l) => l.text);
    expect(log).toContainEqual(expect.stringMatching(/connection closed mid-line \(30 bytes without a newline\)/));
    expect((await neighbour.result).data).toEqual({ n: 1 });
    await neighbour.finished;
    await expectNothingLeft(ipcDir);
  });

  test('a complete last line without its newline is still delivered when the connection closes', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('closes-mid-line.mjs'), args: ['complete'] });
    expect((await task.result).data).toEqual({ ended: 'without a newline' });
    await task.finished;
    await expectNothingLeft(ipcDir);
  });

  test('an agent that ignores cancel and SIGTERM is killed with SIGKILL after the grace periods', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('ignores-cancel.mjs') });
    const pid = await new Promise<number>((resolve) =>
      task.on('update', (u) => {
        const data = u.payload?.data as { pid?: number } | undefined;
        if (u.kind === 'partial' && data?.pid) resolve(data.pid);
      }),
    );
    task.cancel('the user changed their mind');
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('cancelled');
    expect(error.message).toContain('the user changed their mind');
    await task.finished;
    expect(task.snapshot()).toMatchObject({ state: 'cancelled', signal: 'SIGKILL' });
    expect(isAlive(pid)).toBe(false);
    await expectNothingLeft(ipcDir);
  });

  test('grandchildren left by an agent that sent its result and exited are killed with the task', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('forks-grandchildren.mjs'), args: ['with-result'] });
    const pids = pidsFrom((await task.result).data);
    expect(pids).toHaveLength(3);
    await task.finished;
    await waitUntilGone(pids);
    await expectNothingLeft(ipcDir);
  });

  test('grandchildren that hold the output pipes do not keep a resultless task open', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('forks-grandchildren.mjs'), args: ['without-result'] });
    let pids: number[] = [];
    task.on('update', (u) => u.kind === 'partial' && (pids = pidsFrom(u.payload?.data)));
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error.reason).toBe('crashed');
    expect(error.message).toContain('exited with code 0 without sending a final payload');
    await task.finished;
    expect(pids).toHaveLength(3);
    await waitUntilGone(pids);
    await expectNothingLeft(ipcDir);
  });

  test('stdout after the final payload is ignored and counted; the first result stands', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: hostile('stdout-after-final.mjs') });
    expect((await task.result).data).toEqual({ first: true });
    await task.finished;
    const snap = task.snapshot();
    expect(snap).toMatchObject({ state: 'succeeded', counters: { ignored: 2 } });
    expect(snap.result?.data).toEqual({ first: true });
    const log = broker.logOf(task.id).map((l) => l.text);
    expect(log).toContain('chatter after the result');
    expect(log.filter((text) => /payload via stdout after the task was decided/.test(text))).toHaveLength(2);
    await expectNothingLeft(ipcDir);
  });

  test('a command that does not exist fails at once with a clear reason and no retry', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: 'backchannel-no-such-agent', retries: 3 });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error).toMatchObject({ reason: 'crashed' });
    expect(error.message).toContain('command not found: backchannel-no-such-agent');
    await task.finished;
    expect(task.snapshot().attempt).toBe(1);
    expect((await broker.submit({ command: fixture('quick.mjs'), input: { n: 2 } }).result).data).toEqual({ n: 2 });
    await broker.onIdle();
    await expectNothingLeft(ipcDir);
  });

  test('a working directory that does not exist fails with a clear reason, before anything starts', async () => {
    const { broker, ipcDir } = makeBroker();
    const task = broker.submit({ command: fixture('quick.mjs'), cwd: '/no/such/dir/here', retries: 3 });
    const error = ((await settle(task.result)) as { error: TaskError }).error;
    expect(error).toMatchObject({ reason: 'crashed' });
    expect(error.message).toContain('working directory does not exist: /no/such/dir/here');
    await task.finished;
    expect(task.snapshot()).toMatchObject({ attempt: 1 });
    expect(task.snapshot().pid).toBeUndefined();
    await expectNothingLeft(ipcDir);
  });
});
