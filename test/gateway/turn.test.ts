/** The turn runner's bridge-mode decisions, pure: which mode a request runs in, which results continue a run, which are a 400. */
import { describe, expect, test } from 'vitest';
import type { ModelRoute } from '../../src/gateway/config.js';
import { parseChatRequest } from '../../src/gateway/request.js';
import { checkResultIds, trailingResults } from '../../src/gateway/bridged-turn.js';
import { modeOf } from '../../src/gateway/turn.js';
import { unavailableRoute } from '../../src/gateway/turn-errors.js';
import { resolveGatewayConfig } from '../../src/gateway/config.js';

const route = (mode?: ModelRoute['mode']): ModelRoute => ({
  kind: 'command',
  command: 'x',
  args: [],
  allowWrites: false,
  env: {},
  ...(mode ? { mode } : {}),
});
const TOOLS = [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }];
const call = (id: string) => ({ id, type: 'function', function: { name: 'read', arguments: '{}' } });

describe('modeOf', () => {
  test.each([
    [undefined, true, 'bridge'],
    [undefined, false, 'agent'],
    ['bridge', false, 'agent'],
    ['agent', true, 'agent'],
    ['plan', true, 'plan'],
  ] as const)('mode %s with tools offered %s runs as %s', (mode, offered, expected) => {
    const turn = parseChatRequest({ messages: [{ role: 'user', content: 'x' }], ...(offered ? { tools: TOOLS } : {}) });
    expect(modeOf(route(mode), turn)).toBe(expected);
  });
});

describe('trailingResults', () => {
  test('the results after the last assistant turn, and the history before that turn', () => {
    const { messages } = parseChatRequest({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c2', content: 'two' },
      ],
    });
    const trailing = trailingResults(messages);
    expect(trailing.results.map((r) => r.id)).toEqual(['c1', 'c2']);
    expect(trailing.steering).toBe(false);
    expect(trailing.prefix.map((m) => m.content)).toEqual(['go']);
  });

  test('a new user message after the results: nothing trails (not a continuation)', () => {
    const { messages } = parseChatRequest({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('c1')] },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'user', content: 'stop, do something else' },
      ],
    });
    expect(trailingResults(messages).results).toEqual([]);
  });
});

describe('checkResultIds', () => {
  test('a result for a call that an assistant message made passes; any other is a 400 naming its id', () => {
    const ok = parseChatRequest({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('c1')] },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
      ],
    });
    expect(() => checkResultIds(ok.messages)).not.toThrow();
    const bad = parseChatRequest({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'tool', tool_call_id: 'c9', content: 'x' },
      ],
    });
    expect(() => checkResultIds(bad.messages)).toThrow(/`c9`/);
  });
});

describe('unavailableRoute', () => {
  const config = resolveGatewayConfig({ port: 0 });
  const claude = (env: Record<string, string>): ModelRoute => ({ kind: 'claude-code', allowWrites: false, env });

  test("a claude-code model whose env names an installed CLAUDE_BIN is available, whatever the gateway's PATH has", () => {
    expect(unavailableRoute(config, claude({ CLAUDE_BIN: process.execPath }))).toBeUndefined();
  });

  test('a claude-code model whose env names a missing CLAUDE_BIN is unavailable, saying how to fix it', () => {
    expect(unavailableRoute(config, claude({ CLAUDE_BIN: '/nonexistent/claude' }))).toMatch(/^Claude Code \(`claude`\) is not installed/);
  });
});
