import { describe, expect, test } from 'vitest';
import { makeBroker, waitFor, waitUntilGone } from '../helpers/core.js';
import { runTask, startTask } from '../helpers/broker.js';
import { acpCase, agentPids, nextQuestion, script } from './acp-helpers.js';

/** Each failure is one clear line ("failed: <why>") and still carries the work so far. */
function failure(done: Awaited<ReturnType<typeof runTask>>) {
  expect(done.error?.reason).toBe('error');
  const message = done.error!.message;
  expect(message.split('\n')).toHaveLength(1);
  return { message, data: (done.error!.payload?.data ?? {}) as Record<string, any> };
}

describe('an ACP agent is untrusted input: each bad input is a clear failure or a recorded refusal', () => {
  test('an agent that never answers initialize fails within the bound, and leaves no process', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec('hello', { env: { ACP_FIXTURE_HANG: 'initialize' }, settings: { initTimeoutMs: 400 } }));
    expect(failure(done).message).toMatch(/failed: the ACP agent did not answer initialize within 400 ms$/);
    await waitUntilGone(agentPids(acp.state));
  });

  test('malformed lines are refused and counted; the turn goes on', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [{ garbage: 'this is {not json' }, { garbage: '[1,2]' }, { garbage: '42' }, { say: 'still here' }];
    const done = await runTask(broker, acp.spec(script(steps)));
    expect(done.error).toBeUndefined();
    expect((done.payload!.data as any).text).toBe('still here');
    expect((done.payload!.meta as any).acp.malformed_messages).toBe(3);
    expect((done.payload!.data as any).refusals).toEqual([expect.stringContaining('not a JSON-RPC message')]);
  });

  test('a 10 MB message is taken and the kept text bounded; one over the limit fails clearly', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const ten = await runTask(broker, acp.spec(script([{ bigLine: 10_000_000 }])));
    expect(ten.error).toBeUndefined();
    const data = ten.payload!.data as Record<string, any>;
    expect(data.text).toHaveLength(1024 * 1024);
    expect(data.text_truncated).toBe(true);
    const over = await runTask(broker, acp.spec(script([{ say: 'before ' }, { bigLine: 12 * 1024 * 1024 }])));
    const { message, data: kept } = failure(over);
    expect(message).toMatch(/failed: the ACP agent sent a message over the 11 MiB limit$/);
    expect(kept.text).toBe('before ');
    await waitUntilGone(agentPids(acp.state));
  });

  test('unknown update kinds are ignored and counted', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec(script([{ unknownUpdate: 'mystery' }, { unknownUpdate: 'hologram' }, { say: 'done' }])));
    expect((done.payload!.data as any).text).toBe('done');
    expect((done.payload!.meta as any).acp.ignored_updates).toBe(2);
  });

  test('a flood of updates is coalesced into a few partials, nothing lost from the result', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec(script([{ flood: 20_000 }])));
    expect(done.error).toBeUndefined();
    expect((done.payload!.data as any).text).toBe('.'.repeat(20_000));
    expect((done.payload!.data as any).tool_calls).toHaveLength(40);
    expect(done.partials.length).toBeLessThan(200);
  });

  test('a flood of permission requests: 32 wait their turn, the rest are rejected as unanswered at once', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 5000 });
    const acp = acpCase();
    const asks = Array.from({ length: 40 }, (_, i) => ({ permission: { id: `f${i}`, title: `Edit ${i}` } }));
    const run = startTask(broker, acp.spec(script([{ parallel: asks }])));
    await nextQuestion(run.handle);
    await waitFor(
      () => run.partials.some((p) => ((p.data as { text?: string }).text?.match(/reject-once/g)?.length ?? 0) >= 8),
      'the refusals',
    );
    run.handle.cancel('enough');
    const data = (await run.done).error!.payload!.data as Record<string, any>;
    expect(data.approvals.filter((a: any) => a.decision === 'unanswered')).toHaveLength(8);
  });

  test('an agent exiting mid-turn is a clear failure that keeps the work', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec(script([{ say: 'partial answer' }, { exit: 3 }])));
    const { message, data } = failure(done);
    expect(message).toMatch(/failed: the ACP agent exited \(code 3\) in the middle of a turn$/);
    expect(data.text).toBe('partial answer');
  });

  test('a JSON-RPC error, a refusal, a bad input and a missing program each fail in one line; the broker runs on', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const errored = failure(await runTask(broker, acp.spec(script([{ say: 'trying' }, { error: 'model overloaded' }]))));
    expect(errored.message).toMatch(/failed: the ACP agent answered with an error: .*model overloaded$/);
    expect(errored.data.text).toBe('trying');
    const refused = failure(await runTask(broker, acp.spec(script([{ say: 'I will not do that.' }, { stop: 'refusal' }]))));
    expect(refused.message).toMatch(/failed: the agent refused: I will not do that\.$/);
    expect(refused.data.stop_reason).toBe('refusal');
    const noPrompt = failure(await runTask(broker, acp.spec({ command: 'rm', args: ['-rf', '/'] })));
    expect(noPrompt.message).toMatch(/failed: the task's input must be a prompt: a string or \{prompt: string\}$/);
    const badSettings = failure(await runTask(broker, acp.spec('hi', { env: { BACKCHANNEL_ACP: '{"approvals":{"edit":"maybe"}}' } })));
    expect(badSettings.message).toMatch(/failed: BACKCHANNEL_ACP: approvals\.edit: /);
    const missing = failure(await runTask(broker, { ...acp.spec('hi'), args: ['--', '/nonexistent/acp-agent'] }));
    expect(missing.message).toMatch(/command not found: \/nonexistent\/acp-agent/);
    // The broker is unharmed: the next task runs as usual.
    const fine = await runTask(broker, acp.spec({ prompt: 'are you there?', command: 'ignored' }));
    expect((fine.payload!.data as any).text).toBe('echo: are you there?');
  });

  test('an agent that dies before the session starts fails clearly', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, { ...acp.spec('hi'), args: ['--', 'node', '-e', 'process.exit(5)'] });
    expect(failure(done).message).toMatch(/failed: the ACP agent exited \(code 5\) before the session started$/);
  });

  test("the agent inherits neither the adapter's settings nor the task's hand-off secrets", async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const names = ['BACKCHANNEL_ACP', 'CURSOR_TASK_ID', 'CURSOR_IPC_PATH', 'CURSOR_IPC_TOKEN', 'ACP_FIXTURE_STATE'];
    const done = await runTask(broker, acp.spec(script([{ env: names }]), { settings: { door: 'cli' } }));
    expect((done.payload!.data as any).text).toBe('[env: ACP_FIXTURE_STATE]');
  });

  test('an agent that needs authentication gets it through its API-key method', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(broker, acp.spec('hi', { env: { ACP_FIXTURE_AUTH: '1' } }));
    expect(done.error).toBeUndefined();
    expect((done.payload!.data as any).text).toBe('echo: hi');
  });
});
