import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeBroker } from '../helpers/core.js';
import { startTask } from '../helpers/broker.js';
import { acpCase, nextQuestion, script } from './acp-helpers.js';

const announceAndAsk = (file: string, content: string) => [
  { tool: { id: 'w1', title: `Write ${file}`, kind: 'edit', paths: [file] } },
  { permission: { id: 'w1', write: { path: file, content } } },
];

describe('ACP permission requests become questions, under a policy per tool kind', () => {
  test("a question carries the agent's options and the tool call; allowing writes the file, and the write is not asked again", async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script(announceAndAsk('notes.txt', 'hello'))));
    const question = await nextQuestion(run.handle);
    expect(question.question).toBe(`needs approval: Write notes.txt ${path.join(acp.cwd, 'notes.txt')}`);
    expect(question.choices).toEqual(['Allow once', 'Allow always', 'Reject']);
    expect(question.approval).toEqual({
      tool_call_id: 'w1',
      kind: 'edit',
      title: 'Write notes.txt',
      locations: [path.join(acp.cwd, 'notes.txt')],
      options: [
        { option_id: 'allow-once', name: 'Allow once', kind: 'allow_once' },
        { option_id: 'allow-always', name: 'Allow always', kind: 'allow_always' },
        { option_id: 'reject-once', name: 'Reject', kind: 'reject_once' },
      ],
    });
    expect(broker.answer(run.handle.id, question.askId, 'Allow once')).toBe(true);
    const done = await run.done;
    expect(done.error).toBeUndefined();
    expect(readFileSync(path.join(acp.cwd, 'notes.txt'), 'utf8')).toBe('hello');
    const data = done.payload!.data as Record<string, any>;
    expect(data.text).toContain('[permission w1: allow-once]');
    expect(data.text).toContain('[wrote notes.txt]');
    expect(data.files_written).toEqual(['notes.txt']);
    expect(data.approvals).toEqual([
      expect.objectContaining({ tool_call_id: 'w1', kind: 'edit', option_id: 'allow-once', decision: 'allowed', by: 'answer' }),
    ]);
    // One question in all: the write the person allowed was not asked about again.
    expect(done.updates.filter((u) => u.kind === 'ask')).toHaveLength(1);
    expect((done.payload!.meta as any).acp.approvals).toEqual({ asked: 1, allowed: 1, rejected: 0, unanswered: 0 });
  });

  test('rejecting (by number) leaves the file as it was', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script(announceAndAsk('notes.txt', 'hello'))));
    const question = await nextQuestion(run.handle);
    broker.answer(run.handle.id, question.askId, '3');
    const done = await run.done;
    expect(existsSync(path.join(acp.cwd, 'notes.txt'))).toBe(false);
    const data = done.payload!.data as Record<string, any>;
    expect(data.text).toContain('[permission w1: reject-once]');
    expect(data.approvals[0]).toMatchObject({ decision: 'rejected', by: 'answer', option_id: 'reject-once' });
    expect(data.files_written).toEqual([]);
  });

  test('the policy allows or rejects a kind without asking', async () => {
    const { broker } = makeBroker();
    const allowCase = acpCase();
    const allowed = startTask(broker, allowCase.spec(script(announceAndAsk('a.txt', 'A')), { settings: { approvals: { edit: 'allow' } } }));
    const rejectCase = acpCase();
    const rejected = startTask(
      broker,
      rejectCase.spec(script(announceAndAsk('b.txt', 'B')), { settings: { approvals: { edit: 'reject' } } }),
    );
    const [a, b] = await Promise.all([allowed.done, rejected.done]);
    expect(a.updates.some((u) => u.kind === 'ask')).toBe(false);
    expect(b.updates.some((u) => u.kind === 'ask')).toBe(false);
    expect(readFileSync(path.join(allowCase.cwd, 'a.txt'), 'utf8')).toBe('A');
    expect(existsSync(path.join(rejectCase.cwd, 'b.txt'))).toBe(false);
    expect((a.payload!.data as any).approvals[0]).toMatchObject({ decision: 'allowed', by: 'policy', option_id: 'allow-once' });
    expect((b.payload!.data as any).approvals[0]).toMatchObject({ decision: 'rejected', by: 'policy', option_id: 'reject-once' });
    expect((a.payload!.meta as any).acp.approvals).toEqual({ asked: 0, allowed: 1, rejected: 0, unanswered: 0 });
  });

  test('silence never approves: an unanswered question rejects and counts as unanswered', async () => {
    const { broker } = makeBroker({ askTimeoutMs: 300 });
    const acp = acpCase();
    const done = await startTask(broker, acp.spec(script(announceAndAsk('notes.txt', 'hello')))).done;
    expect(existsSync(path.join(acp.cwd, 'notes.txt'))).toBe(false);
    const data = done.payload!.data as Record<string, any>;
    expect(data.text).toContain('[permission w1: reject-once]');
    expect(data.approvals[0]).toMatchObject({ decision: 'unanswered', by: 'timeout', option_id: 'reject-once' });
    expect((done.payload!.meta as any).acp.approvals).toEqual({ asked: 1, allowed: 0, rejected: 0, unanswered: 1 });
  });

  test('a permission for a tool call never announced is still asked, flagged unannounced', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script([{ permission: { id: 'ghost', title: 'Delete everything', kind: 'delete' } }])));
    const question = await nextQuestion(run.handle);
    expect(question.approval).toMatchObject({ tool_call_id: 'ghost', kind: 'delete', unannounced: true });
    broker.answer(run.handle.id, question.askId, 'Reject');
    const data = (await run.done).payload!.data as Record<string, any>;
    expect(data.approvals[0]).toMatchObject({ tool_call_id: 'ghost', decision: 'rejected', unannounced: true });
  });

  test('a write no approval covers goes through the edit policy: asked, then written when allowed', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script([{ write: { path: 'direct.txt', content: 'D' } }])));
    const question = await nextQuestion(run.handle);
    expect(question.question).toBe(`needs approval: write direct.txt ${path.join(acp.cwd, 'direct.txt')}`);
    expect(question.choices).toEqual(['allow', 'reject']);
    broker.answer(run.handle.id, question.askId, 'allow');
    const done = await run.done;
    expect(readFileSync(path.join(acp.cwd, 'direct.txt'), 'utf8')).toBe('D');
    expect((done.payload!.data as any).approvals[0]).toMatchObject({ tool_call_id: 'write:direct.txt', decision: 'allowed', by: 'answer' });
  });

  test('parallel permission requests are asked one at a time, none refused for waiting', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const ask = (id: string, file: string) => ({ permission: { id, write: { path: file, content: id } } });
    const run = startTask(broker, acp.spec(script([{ parallel: [ask('p1', 'one.txt'), ask('p2', 'two.txt')] }])));
    const first = await nextQuestion(run.handle);
    broker.answer(run.handle.id, first.askId, 'Allow once');
    const second = await nextQuestion(run.handle, first.askId);
    expect(second.approval?.tool_call_id).not.toBe(first.approval?.tool_call_id);
    broker.answer(run.handle.id, second.askId, 'Allow once');
    const done = await run.done;
    expect(readFileSync(path.join(acp.cwd, 'one.txt'), 'utf8')).toBe('p1');
    expect(readFileSync(path.join(acp.cwd, 'two.txt'), 'utf8')).toBe('p2');
    expect((done.payload!.meta as any).acp.approvals).toEqual({ asked: 2, allowed: 2, rejected: 0, unanswered: 0 });
  });
});
