import { describe, expect, test } from 'vitest';
import { agentCommandLine } from '../../src/acp/agent-process.js';
import { pickOption } from '../../src/acp/approvals.js';
import { replayText } from '../../src/acp/session.js';
import { DEFAULT_APPROVALS, parseSettings } from '../../src/acp/settings.js';
import { MAX_TEXT_CHARS, Work } from '../../src/acp/work.js';

const OPTIONS = [
  { option_id: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { option_id: 'reject-once', name: 'Reject', kind: 'reject_once' },
];

describe("the adapter's pieces", () => {
  test('settings: absent means the defaults; a bad value is one line naming its place', () => {
    expect(parseSettings(undefined)).toEqual({
      door: 'control',
      approvals: DEFAULT_APPROVALS,
      onBudget: 'pause',
      terminal: false,
      initTimeoutMs: 30_000,
    });
    expect(parseSettings('{"approvals":{"execute":"allow"},"maxCostUsd":2}')).toMatchObject({
      approvals: { ...DEFAULT_APPROVALS, execute: 'allow' },
      maxCostUsd: 2,
    });
    expect(() => parseSettings('{nope')).toThrow('BACKCHANNEL_ACP is not JSON');
    expect(() => parseSettings('{"maxCostUsd":-1}')).toThrow(/^BACKCHANNEL_ACP: maxCostUsd: /);
    expect(() => parseSettings('{"onBudget":"shrug"}')).toThrow(/^BACKCHANNEL_ACP: onBudget: /);
  });

  test('an answer picks an option by name, number, id or kind; anything else picks none', () => {
    expect(pickOption(OPTIONS, ' allow ONCE ')?.option_id).toBe('allow-once');
    expect(pickOption(OPTIONS, '2')?.option_id).toBe('reject-once');
    expect(pickOption(OPTIONS, 'reject-once')?.option_id).toBe('reject-once');
    expect(pickOption(OPTIONS, 'allow_once')?.option_id).toBe('allow-once');
    expect(pickOption(OPTIONS, 'yes please')).toBeUndefined();
    expect(pickOption(OPTIONS, '3')).toBeUndefined();
  });

  test("the agent's command line is what follows --, without the broker's --task-id=", () => {
    expect(agentCommandLine(['node', 'main.js', '--', 'agent', '--x', '--task-id=abc'])).toEqual(['agent', '--x']);
    expect(agentCommandLine(['node', 'main.js', 'agent', 'acp'])).toEqual(['agent', 'acp']);
  });

  test('updates of any shape: the bad ones are counted, the text bounded', () => {
    const work = new Work();
    for (const bad of [
      null,
      7,
      'x',
      {},
      { sessionUpdate: 5 },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'image' } },
      { sessionUpdate: 'tool_call' },
    ]) {
      expect(work.apply(bad)).toBe('none');
    }
    expect(work.ignoredUpdates).toBe(7);
    expect(work.apply({ sessionUpdate: 'available_commands_update', availableCommands: [] })).toBe('none');
    expect(work.ignoredUpdates).toBe(7);
    work.apply({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x'.repeat(MAX_TEXT_CHARS + 5) } });
    expect(work.text).toHaveLength(MAX_TEXT_CHARS);
    expect(work.textTruncated).toBe(true);
    expect(work.apply({ sessionUpdate: 'usage_update', used: null, size: 10, cost: { amount: -1, currency: 'USD' } })).toBe('usage');
    expect(work.costUsd).toBeUndefined();
    work.apply({ sessionUpdate: 'usage_update', used: 1, size: 10, cost: { amount: 0.5, currency: 'EUR' } });
    expect(work.costUsd).toBeUndefined();
  });

  test('a transcript replays as role-labelled lines, strings as they are, anything else dropped', () => {
    expect(replayText([{ role: 'user', text: 'hi' }, 'a note', 42, { role: 'agent', text: 'hello' }])).toBe(
      'Earlier in this conversation:\nuser: hi\na note\nagent: hello\n\nContinue from there.\n\n',
    );
    expect(replayText([])).toBe('');
  });
});
