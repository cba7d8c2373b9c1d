/**
 * Bridge mode through ACP with a real agent (issue 44 §6): the real claude-agent-acp (pinned) as a
 * gateway model with `acp: true, mode: bridge`, against the fake Anthropic server. The client (the
 * OpenAI SDK here) offers `write_file`; the agent sees it as `mcp__backchannel__write_file` (the stdio
 * relay offered in session/new), and its scripted call comes back to the client as a tool call of
 * the same task (its permission request for it allowed: the client's own prompts apply); the agent's
 * own Write is refused at its permission request; the prompt states the
 * client's root (host anchoring). The client's file is written by the client, the scratch workspace
 * keeps no hello.txt.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, test } from 'vitest';
import { ROOT, createTestBroker, tempDir } from '../helpers/core.js';
import { blocksOf, startFakeAnthropic, type FakeAnthropic, type FakeAnthropicRequest } from '../helpers/fake-anthropic.js';
import { clientFor } from '../helpers/real-clients.js';
import { startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeAgentAcp);
const WRITE_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string' }, content: { type: 'string' } },
  required: ['path', 'content'],
};
const TOOLS = [{ type: 'function' as const, function: { name: 'write_file', description: 'Writes a file', parameters: WRITE_SCHEMA } }];

const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

const results = (request: FakeAnthropicRequest) =>
  (request.body.messages ?? []).flatMap((m) => blocksOf(m)).filter((b) => b.type === 'tool_result');

describe.skipIf(claude.skip !== undefined)(`${claude.title} as a bridge-mode gateway model`, { timeout: 240_000 }, () => {
  test("the client's tool acts, the agent's own Write is refused, the client's root is in the prompt", async () => {
    const host = fs.realpathSync(tempDir('bc-acp-gwb-host-'));
    const target = path.join(host, 'hello.txt');
    const model = await startFakeAnthropic({
      script(request) {
        const done = results(request);
        if ((request.body.tools ?? []).length === 0) return { text: 'A title' };
        if (done.length === 0) return { tool: { name: 'Write', input: { file_path: target, content: 'own\n' } } };
        if (done.length === 1) return { tool: { name: 'mcp__backchannel__write_file', input: { path: target, content: 'bridged\n' } } };
        return { text: `Done: ${JSON.stringify(done.map((b) => b.content))}` };
      },
    });
    fakes.push(model);
    const dir = tempDir('bc-acp-gwb-');
    const env = {
      HOME: tempDir('bc-acp-gwb-home-'),
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'k-fake',
      IS_SANDBOX: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    const { broker } = createTestBroker({ acp: { adapter: path.join(ROOT, 'dist/acp/main.js') } });
    const gw = await startTestGateway(
      { models: { claude: { command: claude.bin, acp: true, mode: 'bridge', env } }, session_workspaces: true },
      { dir, broker },
    );
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: `You help.\n<env>\nWorking directory: ${host}\nPlatform: linux\n</env>` },
      { role: 'user', content: 'Write hello.txt saying bridged' },
    ];
    const first = await openai.chat.completions.create({ model: 'claude', messages, tools: TOOLS }).withResponse();
    const choice = first.data.choices[0]!;
    expect(choice.finish_reason, JSON.stringify(first.data)).toBe('tool_calls');
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('write_file');
    expect(JSON.parse(call.function.arguments)).toEqual({ path: target, content: 'bridged\n' });
    fs.writeFileSync(target, 'bridged\n'); // the client runs its tool
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: 'wrote hello.txt' });

    const second = await openai.chat.completions.create({ model: 'claude', messages, tools: TOOLS }).withResponse();
    expect(second.response.headers.get('x-backchannel-task-id')).toBe(first.response.headers.get('x-backchannel-task-id'));
    const answer = second.data.choices[0]!.message.content!;
    expect(answer).toMatch(/^Done: /);
    expect(answer).toContain('wrote hello.txt');
    expect(fs.readFileSync(target, 'utf8')).toBe('bridged\n');

    // What the model saw: the relay's tool beside Claude Code's own, the client's root in the prompt,
    // and its own Write refused (an error result), never run.
    const seen = model.requests.find((r) => (r.body.tools ?? []).some((t) => t.name === 'mcp__backchannel__write_file'));
    expect(seen, 'a request offering the relay tool').toBeDefined();
    expect(JSON.stringify(seen!.body.messages)).toContain(host);
    const refused = results(model.requests.at(-1)!)[0]!;
    expect(refused.is_error).toBe(true);
    const [task] = await gw.client.listTasks();
    const result = await (await gw.client.follow(task!.id)).result;
    expect((result.data as { approvals: unknown[] }).approvals).toEqual([
      expect.objectContaining({ kind: 'edit', decision: 'rejected', by: 'policy' }),
      // Claude asks before an MCP tool call: the client's tool is the client's to allow.
      expect.objectContaining({ kind: 'other', title: 'mcp__backchannel__write_file', decision: 'allowed', by: 'policy' }),
    ]);
  });
});
