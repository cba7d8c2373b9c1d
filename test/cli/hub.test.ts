/**
 * `backchannel run` and the task commands against a running hub (`backchannel serve`), all real
 * processes: run --detach from another process, tasks, logs -f, wait, cancel, answer, retry; attached
 * runs with the same exit codes and Ctrl-C; a hub killed under an attached run; no hub at all.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { fixture, ROOT, waitFor } from '../helpers/core.js';
import { cli, hubEnv, start, startHub } from '../hub/control/hub-process.js';

const TICKS = path.join(ROOT, 'test/cli/fixtures/ticks.mjs');

async function tasksOf(env: NodeJS.ProcessEnv): Promise<TaskSnapshot[]> {
  const { code, stdout, stderr } = await cli(['tasks', '--json', '--limit', '100'], env);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as TaskSnapshot[];
}

// 120 s a test: each starts a hub and runs up to a dozen CLI processes one after another, slow on a busy machine.
describe('task commands against a running hub', { timeout: 120_000 }, () => {
  test('run --detach prints the id at once; tasks lists it; logs -f follows it to the end; wait exits 0 with the result', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const detached = await cli(['run', '--detach', '--input', '{"ticks":6,"hold":true}', '--label', 'ticking', '--', TICKS], hub.env);
    expect(detached.code, detached.stderr).toBe(0);
    const id = detached.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    // The agent holds at its question until the test answers: queued, running, or (on a fast
    // machine, all six ticks already out) asking; never ended.
    const listed = await cli(['tasks'], hub.env);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+(queued|running|needs answer)\\s.*ticking`));

    const follow = start(['logs', '-f', id.slice(0, 18)], hub.env);
    await waitFor(() => follow.stdout().includes('tick 6'), 'logs -f to show the ticks');
    expect((await cli(['answer', id, 'yes'], hub.env)).code).toBe(0);
    expect(await follow.exited).toBe(0);
    const lines = follow
      .stdout()
      .split('\n')
      .filter((line) => /\[stderr\] (tick \d|finished)/.test(line));
    expect(lines).toEqual([...[1, 2, 3, 4, 5, 6].map((i) => `[stderr] tick ${i}`), '[stderr] finished: yes']);

    const waited = await cli(['wait', '--json', id], hub.env);
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.stdout)).toMatchObject({ task_id: id, status: 'success', data: { ticks: 6 } });

    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/state\s+succeeded/);
    const again = await cli(['retry', '--json', id], hub.env);
    const retried = (JSON.parse(again.stdout) as { task_id: string }).task_id;
    expect(retried).not.toBe(id);
    await waitFor(async () => (await tasksOf(hub.env)).find((t) => t.id === retried)?.pendingQuestion, 'the retried task to ask');
    expect((await cli(['answer', retried.slice(0, 20), 'again'], hub.env)).code).toBe(0);
    expect((await cli(['wait', retried], hub.env)).code).toBe(0);
  });

  test('cancel ends a running task and wait exits 130; answer reaches an asking sub-agent', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const id = (await cli(['run', '--detach', '--', fixture('cancellable.mjs')], hub.env)).stdout.trim();
    const asker = (await cli(['run', '--detach', '--', fixture('asker.mjs')], hub.env)).stdout.trim();
    await waitFor(async () => (await tasksOf(hub.env)).find((t) => t.id === id)?.progress === 1, 'the task to run');
    const cancelled = await cli(['cancel', id.slice(0, 20)], hub.env);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    const waited = await cli(['wait', id], hub.env);
    expect(waited.code).toBe(130);
    expect(waited.stderr).toContain('[cancelled]');
    const shown = await cli(['show', id], hub.env);
    expect(shown.stdout).toMatch(/^state\s+cancelled$/m);
    const retried = await cli(['retry', id], hub.env);
    expect(retried.stdout).toMatch(new RegExp(`^Started [0-9a-f-]{36}, a retry of ${id}\n$`));
    await cli(['cancel', retried.stdout.split(' ')[1]!.replace(/,$/, '')], hub.env);

    await waitFor(async () => (await tasksOf(hub.env)).find((t) => t.id === asker)?.pendingQuestion, 'the question');
    expect((await cli(['answer', asker, 'dev'], hub.env)).code).toBe(0);
    const answered = await cli(['wait', '--json', asker], hub.env);
    expect(JSON.parse(answered.stdout)).toMatchObject({ data: { answer: 'dev' } });
    expect((await cli(['cancel', id], hub.env)).stderr).toContain('already ended');
  });

  test('an attached run goes to the hub with the same exit codes and --json; --local stays out of it', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const crashed = await cli(['run', '--json', '--label', 'crashes', '--', fixture('crash.mjs')], hub.env);
    expect(crashed.code).toBe(1);
    expect(JSON.parse(crashed.stdout)).toMatchObject({ reason: 'crashed' });
    const local = await cli(['run', '--local', '--json', '--label', 'local one', '--', fixture('quick.mjs')], hub.env);
    expect(local.code).toBe(0);
    const labels = (await tasksOf(hub.env)).map((t) => t.label);
    expect(labels).toContain('crashes');
    expect(labels).not.toContain('local one');
  });

  test('Ctrl-C on an attached run cancels the task in the hub and exits 130', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const run = start(['run', '--label', 'interrupt me', '--', fixture('cancellable.mjs')], hub.env);
    const task = await waitFor(
      async () => (await tasksOf(hub.env)).find((t) => t.label === 'interrupt me' && t.progress === 1),
      'it to run',
    );
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect((await tasksOf(hub.env)).find((t) => t.id === task.id)?.state).toBe('cancelled');
  });

  test('an attached run that is killed, or whose terminal closes (SIGHUP), has its hub task cancelled; a detached one stays', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const started = async (label: string) => {
      const run = start(['run', '--label', label, '--', fixture('cancellable.mjs')], hub.env);
      const task = await waitFor(
        async () => (await tasksOf(hub.env)).find((t) => t.label === label && t.progress === 1),
        `${label} to run`,
      );
      return { run, task };
    };
    const killed = await started('killed run');
    killed.run.child.kill('SIGKILL');
    const gone = await waitFor(
      async () => (await tasksOf(hub.env)).find((t) => t.id === killed.task.id && t.state === 'cancelled'),
      'the killed run’s task to be cancelled',
    );
    expect(gone.message).toContain('the front-end that started it went away');

    const hungUp = await started('hung-up run');
    hungUp.run.child.kill('SIGHUP');
    expect(await hungUp.run.exited).toBe(130);
    expect((await tasksOf(hub.env)).find((t) => t.id === hungUp.task.id)?.state).toBe('cancelled');

    const detached = (await cli(['run', '--detach', '--label', 'detached', '--', fixture('cancellable.mjs')], hub.env)).stdout.trim();
    await waitFor(async () => (await tasksOf(hub.env)).find((t) => t.id === detached && t.progress === 1), 'the detached task to run');
    expect((await tasksOf(hub.env)).find((t) => t.id === detached)?.state).toBe('running');
    expect((await cli(['cancel', detached], hub.env)).code).toBe(0);
  });

  test('a hub killed under an attached run: the run fails with a clear message; the next hub removes the stale endpoint', async () => {
    const hub = hubEnv();
    const first = await startHub(hub);
    const run = start(['run', '--label', 'orphan', '--', fixture('cancellable.mjs')], hub.env);
    await waitFor(async () => (await tasksOf(hub.env)).some((t) => t.label === 'orphan' && t.progress === 1), 'it to run');
    first.child.kill('SIGKILL');
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/The Backchannel hub \(control endpoint .*control\.sock\) is gone/);
    const status = await cli(['tasks'], hub.env); // the socket file is still there, nobody listens
    expect(status.stdout).toContain('no hub is running');
    await startHub(hub);
    const tasks = await tasksOf(hub.env);
    expect(tasks.find((t) => t.label === 'orphan')?.state).toBe('interrupted');
  });

  test('without a hub: tasks reads the history, cancel and run --detach say a hub is needed (exit 1), bad options exit 2', async () => {
    const hub = hubEnv();
    expect((await cli(['tasks'], hub.env)).stdout).toContain('No tasks in the history');
    const cancel = await cli(['cancel', 'abc'], hub.env);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toContain('no Backchannel hub is running');
    expect((await cli(['run', '--detach', '--', fixture('quick.mjs')], hub.env)).code).toBe(1);
    expect((await cli(['tasks', '--state', 'sleeping'], hub.env)).code).toBe(2);
    expect((await cli(['wait'], hub.env)).code).toBe(2);
    expect((await cli(['logs', '--help'], hub.env)).stdout).toContain('Usage: backchannel logs [-f] <id>');
  });
});
