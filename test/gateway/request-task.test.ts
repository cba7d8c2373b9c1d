/**
 * The request-task helper the gateway runs on (src/gateway/request-task): queueing behind a
 * concurrency limit, cancellation by abort, timeout and shutdown, and the failure descriptions.
 * Real broker, real stand-in agent (test/fixtures/gateway/agent.mjs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { TaskError } from '../../src/broker/errors.js';
import { createRequestTaskRunner, describeFailure, type RequestTask } from '../../src/gateway/request-task/index.js';
import { clientOf } from '../../src/client/index.js';
import type { TaskSpec } from '../../src/model/task.js';
import { makeBroker, settle, tempDir, waitFor } from '../helpers/core.js';
import { STANDIN_AGENT } from './helpers.js';

function standin(mode: string, dir: string): TaskSpec {
  return {
    command: STANDIN_AGENT,
    args: [],
    input: { prompt: 'hi' },
    label: `request ${mode}`,
    retries: 0,
    env: { GATEWAY_STANDIN: mode, GATEWAY_PID_DIR: dir, GATEWAY_RELEASE_FILE: path.join(dir, 'release') },
  };
}

const running = (run: RequestTask) => run.task?.snapshot().state === 'running';

describe('running one task per request', () => {
  test('beyond maxConcurrent a request waits for a slot; aborting it while queued drops it without a task', async () => {
    const dir = tempDir();
    const { broker } = makeBroker();
    const runner = createRequestTaskRunner({ tasks: clientOf(broker), timeoutMs: 30_000, maxConcurrent: 1 });
    const first = runner.start({ spec: standin('slow', dir), abort: new AbortController() });
    const dropped = new AbortController();
    const second = runner.start({ spec: standin('echo', dir), abort: dropped });
    const third = runner.start({ spec: standin('echo', dir), abort: new AbortController() });
    await waitFor(() => running(first), 'the first task to run');
    expect(runner.inFlight).toBe(3);
    expect([second.task, third.task]).toEqual([undefined, undefined]);

    dropped.abort('disconnect');
    const outcome = await settle(second.result);
    expect(outcome.ok).toBe(false);
    expect(second.why).toBe('disconnect');
    expect(second.task).toBeUndefined();

    fs.writeFileSync(path.join(dir, 'release'), '');
    expect((await first.result).data).toEqual({ text: 'working, done' });
    expect((await third.result).data).toMatchObject({ text: 'Hello: hi' });
    await waitFor(() => runner.inFlight === 0, 'every request to be done');
  });

  test('updates reach the caller with the task, until it settles', async () => {
    const { broker } = makeBroker();
    const runner = createRequestTaskRunner({ tasks: clientOf(broker), timeoutMs: 30_000 });
    const deltas: unknown[] = [];
    const run = runner.start({
      spec: standin('echo', tempDir()),
      abort: new AbortController(),
      onUpdate(update, task) {
        expect(task.id).toBe(run.task?.id);
        if (update.kind === 'partial') deltas.push(update.payload?.data);
      },
    });
    await run.result;
    expect(deltas).toEqual([{ delta: 'Hel' }, { progress: 50 }, { delta: 'lo' }]);
    expect(run.why).toBeUndefined();
  });

  test('a request past its deadline cancels its task with a reason a person can read', async () => {
    const { broker } = makeBroker();
    const runner = createRequestTaskRunner({ tasks: clientOf(broker), timeoutMs: 500, name: 'gateway' });
    const run = runner.start({ spec: standin('slow', tempDir()), abort: new AbortController() });
    const outcome = await settle(run.result);
    expect(outcome.ok).toBe(false);
    expect(TaskError.is(outcome.ok ? undefined : outcome.error)).toBe(true);
    expect(run.why).toBe('timeout');
    expect(run.task!.snapshot().message).toContain('the gateway request timed out after 500 ms');
    // What it had written (its partial `{text: 'working'}`) is kept in the message (issue 47 §2).
    expect(describeFailure(outcome.ok ? undefined : outcome.error, { why: run.why, timeoutMs: 500 })).toEqual({
      kind: 'timeout',
      message: 'The sub-agent did not answer within 500 ms; its task was cancelled.\nWhat it had written before it was stopped: working',
    });
    // The answer the request had streamed wins over the last partial.
    const streamed = describeFailure(outcome.ok ? undefined : outcome.error, { why: run.why, timeoutMs: 500, produced: 'Hello, wor' });
    expect(streamed.message).toContain('What it had written before it was stopped: Hello, wor');
  });

  test('shutdown cancels every request and resolves once their processes are gone', async () => {
    const { broker } = makeBroker();
    const runner = createRequestTaskRunner({ tasks: clientOf(broker), timeoutMs: 30_000, maxConcurrent: 2, name: 'gateway' });
    const runs = [0, 1, 2].map(() => runner.start({ spec: standin('slow', tempDir()), abort: new AbortController() }));
    await waitFor(() => running(runs[0]!) && running(runs[1]!), 'two tasks to run');
    await runner.shutdown();
    expect(runner.inFlight).toBe(0);
    for (const run of runs) {
      const outcome = await settle(run.result);
      expect(outcome.ok).toBe(false);
      expect(run.why).toBe('shutdown');
      expect(describeFailure(outcome.ok ? undefined : outcome.error, { why: run.why, timeoutMs: 1, name: 'gateway' })).toEqual({
        kind: 'unavailable',
        message: 'The gateway is shutting down; the request was cancelled.',
      });
    }
    expect(runs[0]!.task!.snapshot().message).toContain('the gateway is shutting down');
  });

  test("an agent's failure is described with its own message, without the label", async () => {
    const { broker } = makeBroker();
    const runner = createRequestTaskRunner({ tasks: clientOf(broker), timeoutMs: 30_000 });
    const spec = standin('fail', tempDir());
    const run = runner.start({ spec, abort: new AbortController() });
    const outcome = await settle(run.result);
    expect(outcome.ok).toBe(false);
    expect(describeFailure(outcome.ok ? undefined : outcome.error, { why: run.why, timeoutMs: 1 })).toEqual({
      kind: 'agent',
      reason: 'error',
      message: 'The sub-agent failed (error): the model is on fire',
    });
    expect(describeFailure(new Error('no such file'), { why: undefined, timeoutMs: 1 })).toEqual({
      kind: 'internal',
      message: 'The server could not run the sub-agent: no such file',
    });
  });

  test("the description reads the failure's fields, never its text: the label and the framing stay out, a message that looks framed is kept", () => {
    const crashed = new TaskError('t1', 'crashed', 'failed: x: the agent exited with code 3', undefined, undefined, {
      taskMessage: 'the agent exited with code 3',
    });
    expect(describeFailure(crashed, { why: undefined, timeoutMs: 1 })).toEqual({
      kind: 'agent',
      reason: 'crashed',
      message: 'The sub-agent failed (crashed): the agent exited with code 3',
    });
    const framed = new TaskError('t2', 'error', 'review: failed: failed: upstream said no', undefined, undefined, {
      taskMessage: 'failed: failed: upstream said no',
      detail: 'failed: upstream said no',
    });
    expect(describeFailure(framed, { why: undefined, timeoutMs: 1 }).message).toBe(
      'The sub-agent failed (error): failed: upstream said no',
    );
  });
});
