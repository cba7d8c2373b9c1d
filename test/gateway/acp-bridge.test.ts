/**
 * Bridge mode through ACP (issue 44 §6): a gateway model that is an ACP agent (`acp: true`) with
 * `mode: bridge`. The client's tools reach the agent as the MCP server `backchannel` in session/new
 * (the stdio relay), its call comes back to the client as a tool call of the same task, the agent's own
 * edit is refused at its permission request (one for the client's tool is allowed), and host anchoring states the client's root in the
 * prompt and in the session workspace's rules files. The agent: test/fixtures/gateway/acp-bridge-agent.mjs.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { resolveGatewayConfig } from '../../src/gateway/config.js';
import { ROOT, createTestBroker, fixture, tempDir } from '../helpers/core.js';
import { startTestGateway } from './helpers.js';

const AGENT = fixture('gateway/acp-bridge-agent.mjs');
const WRITE_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string' }, content: { type: 'string' } },
  required: ['path', 'content'],
};
const TOOLS = [{ type: 'function' as const, function: { name: 'write_file', description: 'Writes a file', parameters: WRITE_SCHEMA } }];

describe('an ACP agent as a bridge-mode gateway model', () => {
  test("the client's tool acts through the relay, the agent's own edit is refused, the host is anchored", async () => {
    const dir = tempDir('bc-gw-acp-');
    const host = fs.realpathSync(tempDir('bc-gw-acp-host-'));
    const target = path.join(host, 'hello.txt');
    const call = { name: 'write_file', arguments: { path: target, content: 'bridged\n' } };
    const model = { command: AGENT, acp: true, mode: 'bridge', env: { ACP_BRIDGE_TOOL: JSON.stringify(call) } };
    // The adapter as built (dist/acp/main.js): this test imports the broker from src/.
    const { broker } = createTestBroker({ acp: { adapter: path.join(ROOT, 'dist/acp/main.js') } });
    const gw = await startTestGateway({ models: { acp: model }, session_workspaces: true }, { dir, broker });
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: `You help.\n<env>\nWorking directory: ${host}\nPlatform: linux\n</env>` },
      { role: 'user', content: 'Write hello.txt' },
    ];

    const first = await openai.chat.completions.create({ model: 'acp', messages, tools: TOOLS }).withResponse();
    const choice = first.data.choices[0]!;
    expect(choice.finish_reason, JSON.stringify(first.data)).toBe('tool_calls');
    const toolCall = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(toolCall.function.name).toBe('write_file');
    expect(JSON.parse(toolCall.function.arguments)).toEqual(call.arguments);
    // The client runs its tool on its machine.
    fs.writeFileSync(target, call.arguments.content);
    messages.push(choice.message, { role: 'tool', tool_call_id: toolCall.id, content: 'wrote hello.txt' });

    const second = await openai.chat.completions.create({ model: 'acp', messages, tools: TOOLS }).withResponse();
    expect(second.response.headers.get('x-backchannel-task-id')).toBe(first.response.headers.get('x-backchannel-task-id'));
    const report = JSON.parse(second.data.choices[0]!.message.content!) as Record<string, any>;
    expect(report.servers).toEqual(['backchannel']);
    expect(report.tool).toEqual({ tools: ['write_file'], result: 'wrote hello.txt', isError: false });
    expect(report.permission).toBe('reject');
    expect(report.toolPermission).toBe('allow');
    // A title that names the caller's tool does not make the agent's own edit the caller's.
    expect(report.forged).toBe('reject');
    expect(report.prompt).toContain(host);
    expect(report.rules).toEqual(['CLAUDE.md', 'AGENTS.md']);
    expect(report.rulesText).toContain(host);
    expect(fs.readFileSync(target, 'utf8')).toBe('bridged\n');

    const [task] = await gw.client.listTasks();
    expect(task!.tags).toMatchObject({ mode: 'bridge' });
    const result = await (await gw.client.follow(task!.id)).result;
    expect((result.data as { approvals: unknown }).approvals).toEqual([
      expect.objectContaining({ tool_call_id: 'own-edit', kind: 'edit', decision: 'rejected', by: 'policy' }),
      expect.objectContaining({ tool_call_id: 'bridge-call', kind: 'other', decision: 'allowed', by: 'policy' }),
      expect.objectContaining({ tool_call_id: 'forged-edit', kind: 'edit', decision: 'rejected', by: 'policy' }),
    ]);
  });

  test('a session’s next turn replays the conversation to the ACP agent instead of resuming', async () => {
    const dir = tempDir('bc-gw-acp-turns-');
    const { broker } = createTestBroker({ acp: { adapter: path.join(ROOT, 'dist/acp/main.js') } });
    const gw = await startTestGateway({ models: { acp: { command: AGENT, acp: true } }, session_workspaces: true }, { dir, broker });
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'my favourite colour is teal' }];
    const first = await openai.chat.completions.create({ model: 'acp', messages });
    const answer = first.choices[0]!.message.content!;
    expect(JSON.parse(answer).prompt).toContain('teal');
    messages.push({ role: 'assistant', content: answer }, { role: 'user', content: 'what was the colour?' });
    const second = await openai.chat.completions.create({ model: 'acp', messages });
    const prompt = JSON.parse(second.choices[0]!.message.content!).prompt as string;
    expect(prompt).toContain('what was the colour?');
    expect(prompt, 'the first turn is replayed: the adapter’s session ended with its task').toContain('my favourite colour is teal');
  });

  test('`acp: true` needs the agent’s command; with a built-in agent it is refused', () => {
    expect(() => resolveGatewayConfig({ models: { a: { acp: true } } })).toThrow(/`models\.a\.acp` says `command` is an ACP agent/);
    expect(() => resolveGatewayConfig({ models: { a: { agent: 'claude-code', acp: true } } })).toThrow(/`models\.a\.acp`/);
    expect(resolveGatewayConfig({ models: { a: { command: 'claude-agent-acp', acp: true } } }).models.a).toMatchObject({
      kind: 'command',
      acp: true,
    });
  });
});
