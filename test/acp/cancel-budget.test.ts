import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeBroker, waitFor, waitUntilGone } from '../helpers/core.js';
import { runTask, startTask } from '../helpers/broker.js';
import { acpCase, agentPids, nextQuestion, script } from './acp-helpers.js';

describe('cancel and the cost pause keep the work', () => {
  test('cancel mid-turn sends session/cancel, keeps the work so far and leaves no process behind', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 5000 });
    const acp = acpCase();
    const steps = [
      { say: 'Half done. ' },
      { tool: { id: 't1', title: 'Refactor a.ts', kind: 'edit', status: 'in_progress' } },
      { untilCancelled: true },
    ];
    const run = startTask(broker, acp.spec(script(steps)));
    await waitFor(() => run.partials.some((p) => (p.data as { step?: string }).step === 'Refactor a.ts'), 'the step text');
    const adapterPid = run.handle.snapshot().pid!;
    run.handle.cancel('changed my mind');
    const done = await run.done;
    expect(done.error?.reason).toBe('cancelled');
    const data = done.error!.payload!.data as Record<string, any>;
    expect(data.text).toBe('Half done. ');
    expect(data.tool_calls).toEqual([expect.objectContaining({ id: 't1', title: 'Refactor a.ts' })]);
    expect(data.stop_reason).toBe('cancelled');
    // The agent got session/cancel for its session and ended its turn: no signal was needed.
    expect(acp.cancelledSessions()).toEqual([data.session_id]);
    expect(done.snapshot.signal).toBeNull();
    await waitUntilGone([adapterPid, ...agentPids(acp.state)]);
  });

  test('a cancel while a permission question waits answers the agent `cancelled` and writes nothing', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 5000 });
    const acp = acpCase();
    const steps = [{ say: 'asking. ' }, { permission: { id: 'w1', write: { path: 'x.txt', content: 'x' } } }];
    const run = startTask(broker, acp.spec(script(steps)));
    await nextQuestion(run.handle);
    run.handle.cancel('no');
    const done = await run.done;
    expect(done.error?.reason).toBe('cancelled');
    expect((done.error!.payload!.data as Record<string, any>).text).toBe('asking. [permission w1: cancelled]');
    expect(existsSync(path.join(acp.cwd, 'x.txt'))).toBe(false);
  });

  test('a cancel before the session started ends at once, without waiting for the handshake', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 20_000 });
    const acp = acpCase();
    const run = startTask(broker, acp.spec('hi', { env: { ACP_FIXTURE_HANG: 'initialize' } }));
    await waitFor(() => agentPids(acp.state).length === 1, 'the agent to start');
    run.handle.cancel('never mind');
    const done = await run.done;
    expect(done.error?.reason).toBe('cancelled');
    // The adapter confirmed by itself (the broker's grace is 20 s; the handshake's bound 30 s).
    expect(done.snapshot.signal).toBeNull();
    await waitUntilGone(agentPids(acp.state));
  });

  test('an agent that ignores session/cancel still ends: the work so far is sent after a short grace', async () => {
    const { broker } = makeBroker({ cancelGraceMs: 10_000 });
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script([{ say: 'stuck soon. ' }, { hang: true }])));
    await waitFor(() => run.partials.some((p) => (p.data as { text?: string }).text === 'stuck soon. '), 'the text');
    run.handle.cancel('enough');
    const done = await run.done;
    expect(done.error?.reason).toBe('cancelled');
    expect((done.error!.payload!.data as Record<string, any>).text).toBe('stuck soon. ');
    await waitUntilGone(agentPids(acp.state));
  });

  test('at the cost cap the turn pauses and asks; raising continues the same session', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [{ say: 'step one. ' }, { usage: { cost: 0.6 } }, { untilCancelled: true }];
    const run = startTask(broker, acp.spec(script(steps), { settings: { maxCostUsd: 0.5 } }));
    const question = await nextQuestion(run.handle);
    expect(question.question).toBe('budget reached ($0.6 of $0.5): raise the cap / stop');
    expect(question.choices).toEqual(['raise by $0.5', 'stop']);
    broker.answer(run.handle.id, question.askId, 'raise by $0.5');
    const done = await run.done;
    expect(done.error).toBeUndefined();
    const data = done.payload!.data as Record<string, any>;
    // The same session was prompted again (the fixture echoes a prompt without a script).
    expect(data.text).toBe('step one. echo: The budget was raised: continue where you left off.');
    expect(acp.cancelledSessions()).toEqual([data.session_id]);
    expect((done.payload!.meta as any).acp).toMatchObject({ session_id: data.session_id, budget_raises: 1, caps: { max_cost_usd: 1 } });
    expect((done.payload!.meta as any).cost_usd).toBe(0.6);
  });

  test('stopping at the cap ends the task as over its budget, with the work kept', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [{ say: 'kept. ' }, { usage: { cost: 2 } }, { untilCancelled: true }];
    const run = startTask(broker, acp.spec(script(steps), { settings: { maxCostUsd: 1 } }));
    const question = await nextQuestion(run.handle);
    broker.answer(run.handle.id, question.askId, 'stop');
    const done = await run.done;
    // The adapter's error payload says `data.reason: budget_exceeded`, and the broker ends the task so.
    expect(done.error?.reason).toBe('budget_exceeded');
    expect(done.error?.message).toContain('budget reached ($2 of $1): stopped');
    const data = done.error!.payload!.data as Record<string, any>;
    expect(data).toMatchObject({ text: 'kept. ', reason: 'budget_exceeded', code: 'budget_exceeded' });
  });

  test('an agent that spends on after the cap despite session/cancel is stopped, over its budget, its work kept', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(
      broker,
      acp.spec(script([{ say: 'spent. ' }, { usage: { cost: 2 } }, { hang: true }]), { settings: { maxCostUsd: 1 } }),
    );
    expect(done.updates.some((u) => u.kind === 'ask')).toBe(false);
    expect(done.error?.message).toMatch(/budget reached \(\$2 of \$1\): the agent did not stop its turn, so it was stopped$/);
    expect(done.error!.payload!.data).toMatchObject({ text: 'spent. ', reason: 'budget_exceeded' });
    await waitUntilGone(agentPids(acp.state));
  });

  test('the cap reached while a permission question waits: that turn answers it cancelled, the budget question comes next', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const steps = [{ parallel: [{ permission: { id: 'w1', write: { path: 'late.txt', content: 'x' } } }, { usage: { cost: 2 } }] }];
    const run = startTask(broker, acp.spec(script(steps), { settings: { maxCostUsd: 1 } }));
    const permission = await nextQuestion(run.handle);
    await waitFor(() => acp.cancelledSessions().length === 1, 'the budget to cancel the turn');
    // The broker cannot withdraw a question: answering it now approves nothing, the turn is over.
    broker.answer(run.handle.id, permission.askId, 'Allow once');
    const budget = await nextQuestion(run.handle, permission.askId);
    expect(budget.question).toBe('budget reached ($2 of $1): raise the cap / stop');
    broker.answer(run.handle.id, budget.askId, 'stop');
    const done = await run.done;
    expect(done.error!.payload!.data).toMatchObject({ reason: 'budget_exceeded', text: '[permission w1: cancelled]' });
    expect(existsSync(path.join(acp.cwd, 'late.txt'))).toBe(false);
  });
});
