/** The tool side of the three APIs (each reader beside its adapter): offered tools, tool calls and results, thinking requests. */
import { describe, expect, test } from 'vitest';
import { messagesResult, messagesTools, messagesWantThinking } from '../../../src/gateway/anthropic-messages.js';
import { isSteering } from '../../../src/gateway/bridge/wire.js';
import { chatCalls, chatResult, chatTools, InvalidRequest } from '../../../src/gateway/request.js';
import { responsesResult, responsesTools, responsesWantReasoning } from '../../../src/gateway/responses.js';

const SCHEMA = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };

describe('offered tools', () => {
  test('each API offers its function tools as protocol tool definitions; server tools are left out', () => {
    const expected = [{ name: 'read', description: 'Reads a file', input_schema: SCHEMA }];
    expect(chatTools([{ type: 'function', function: { name: 'read', description: 'Reads a file', parameters: SCHEMA } }])).toEqual(
      expected,
    );
    expect(
      responsesTools([{ type: 'function', name: 'read', description: 'Reads a file', parameters: SCHEMA }, { type: 'web_search' }]),
    ).toEqual(expected);
    expect(
      messagesTools([
        { name: 'read', description: 'Reads a file', input_schema: SCHEMA },
        { type: 'web_search_20250305', name: 'web_search' },
      ]),
    ).toEqual(expected);
  });

  test('a tool without parameters gets an empty object schema; one without a name is a 400', () => {
    expect(chatTools([{ type: 'function', function: { name: 'now' } }])).toEqual([
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(() => messagesTools([{ description: 'x' }])).toThrow(InvalidRequest);
  });
});

describe('calls and results', () => {
  test('an assistant message names its calls', () => {
    expect(chatCalls([{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } }, { id: 3 }])).toEqual([
      { id: 'call_1', name: 'read' },
    ]);
  });

  test('results keep their whole content: text parts joined, other JSON kept; is_error is an error answer', () => {
    const big = 'x'.repeat(10 * 1024 * 1024);
    expect(chatResult({ role: 'tool', tool_call_id: 'call_1', content: big }, 'messages[2]')).toEqual({
      id: 'call_1',
      answer: { content: big },
    });
    expect(
      chatResult(
        {
          role: 'tool',
          tool_call_id: 'c',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        'm',
      ),
    ).toEqual({ id: 'c', answer: { content: 'ab' } });
    expect(responsesResult({ type: 'function_call_output', call_id: 'c', output: 'ok' }, 'input[1]')).toEqual({
      id: 'c',
      answer: { content: 'ok' },
    });
    expect(messagesResult({ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }, 'm')).toEqual({
      id: 't',
      answer: { content: [{ type: 'image', source: {} }] },
    });
    expect(messagesResult({ type: 'tool_result', tool_use_id: 't', content: 'no such file', is_error: true }, 'm')).toEqual({
      id: 't',
      answer: { error: 'no such file' },
    });
  });

  test('a result without its call id is a 400 naming the field', () => {
    expect(() => chatResult({ role: 'tool', content: 'x' }, 'messages[2]')).toThrow(/messages\[2\]\.tool_call_id/);
    expect(() => responsesResult({ type: 'function_call_output' }, 'input[1]')).toThrow(/input\[1\]\.call_id/);
    expect(() => messagesResult({ type: 'tool_result' }, 'messages.1.content.0')).toThrow(/tool_use_id/);
  });

  test("Claude Code's system reminders are not steering; other text is", () => {
    expect(isSteering('<system-reminder>\nfile changed\n</system-reminder>\n')).toBe(false);
    expect(isSteering('<system-reminder>x</system-reminder> now stop and do something else')).toBe(true);
  });
});

describe('thinking', () => {
  test('Messages asks with thinking enabled or adaptive; Responses with a reasoning summary', () => {
    expect(messagesWantThinking({ type: 'enabled', budget_tokens: 1024 })).toBe(true);
    expect(messagesWantThinking({ type: 'adaptive' })).toBe(true);
    expect(messagesWantThinking({ type: 'disabled' })).toBe(false);
    expect(messagesWantThinking(undefined)).toBe(false);
    expect(responsesWantReasoning({ effort: 'low', summary: 'auto' })).toBe(true);
    expect(responsesWantReasoning({ effort: 'low' })).toBe(false);
  });
});
