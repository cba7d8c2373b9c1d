/** The tool call's messages (docs/protocol.md §7), checked on both sides: `tool_call` by the broker, `tool_result` by the SDK. */
import { describe, expect, test } from 'vitest';
import { agentMessageProblem, MAX_CALL_ID, validateAgentMessage, validateBrokerMessage } from '../../src/protocol/messages.js';

const call = { type: 'tool_call', task_id: 't', call_id: 'c1', name: 'Read', arguments: { path: 'a.txt' } };

describe('tool_call (agent → broker)', () => {
  test('a call with an id, a name and an object of arguments is valid', () => {
    expect(validateAgentMessage(call)).toEqual({ ok: true, message: call });
    expect(validateAgentMessage({ ...call, arguments: {}, token: 'x' }).ok).toBe(true);
  });

  test.each([
    [{ ...call, call_id: undefined }, 'tool_call without "call_id"'],
    [{ ...call, call_id: '' }, 'tool_call without "call_id"'],
    [{ ...call, call_id: 7 }, 'tool_call without "call_id"'],
    [{ ...call, call_id: 'c'.repeat(MAX_CALL_ID + 1) }, `tool_call "call_id" is longer than ${MAX_CALL_ID} characters`],
    [{ ...call, name: '' }, 'tool_call without "name"'],
    [{ ...call, name: undefined }, 'tool_call without "name"'],
    [{ ...call, arguments: undefined }, 'tool_call "arguments" must be an object'],
    [{ ...call, arguments: '{"path":"a"}' }, 'tool_call "arguments" must be an object'],
    [{ ...call, arguments: ['a'] }, 'tool_call "arguments" must be an object'],
    [{ ...call, arguments: null }, 'tool_call "arguments" must be an object'],
    [{ ...call, task_id: '' }, 'missing "task_id" (a non-empty string)'],
  ])('%j is refused: %s', (message, reason) => {
    expect(agentMessageProblem(message)).toBe(reason);
    expect(validateAgentMessage(message)).toEqual({ ok: false, reason });
  });
});

describe('tool_result and the welcome (broker → agent)', () => {
  test('a result carries content or an error; the welcome may offer tools', () => {
    const content = { type: 'tool_result', task_id: 't', call_id: 'c1', content: 'text' };
    expect(validateBrokerMessage(content)).toEqual({ ok: true, message: content });
    expect(validateBrokerMessage({ type: 'tool_result', task_id: 't', call_id: 'c1', error: 'ENOENT' }).ok).toBe(true);
    const welcome = {
      type: 'welcome',
      task_id: 't',
      attempt: 1,
      protocol: 1,
      heartbeat_timeout_ms: 0,
      tools: [{ name: 'Read', input_schema: { type: 'object' } }],
    };
    expect(validateBrokerMessage(welcome)).toEqual({ ok: true, message: welcome });
  });

  test('a result without its call id, or with an error that is not text, is refused', () => {
    expect(validateBrokerMessage({ type: 'tool_result', task_id: 't', content: 'x' })).toEqual({
      ok: false,
      reason: 'tool_result without "call_id"',
    });
    expect(validateBrokerMessage({ type: 'tool_result', task_id: 't', call_id: 'c', error: 5 })).toEqual({
      ok: false,
      reason: 'tool_result "error" must be a string',
    });
  });
});
