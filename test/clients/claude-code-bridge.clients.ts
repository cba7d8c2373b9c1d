/**
 * The real Claude Code (pinned 2.1.332) as a bridged sub-agent: the claude-code template runs it with
 * the stdio MCP relay (templates/_shared/bridge.mjs), driven by the local fake Anthropic model server,
 * which scripts a call to the bridged `Write` tool. The call reaches the test's tool answerer (the
 * task's caller) through the broker, the answer reaches the model, and the scratch workspace Claude
 * Code runs in has no changed files: the write happened on the caller's side only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WRITE_TOOL } from '../helpers/client-tools.js';
import { ROOT, tempDir } from '../helpers/core.js';
import { blocksOf, startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic.js';
import { gitIn, makeRepo } from '../helpers/git-repo.js';
import { clientFor } from '../helpers/real-clients.js';
import { runTask, startBroker, type TestBroker } from '../helpers/broker.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);

describe.skipIf(claude.skip !== undefined)(`${claude.title} as a bridged sub-agent`, () => {
  let tb: TestBroker;
  let model: FakeAnthropic;
  let host: string;
  beforeAll(async () => {
    tb = await startBroker();
    host = tempDir('bc-cc-host-');
    const target = path.join(host, 'hello.txt');
    model = await startFakeAnthropic({
      script(request) {
        const tools = (request.body.tools ?? []).map((t) => t.name);
        const last = request.body.messages?.at(-1);
        const result = blocksOf(last).find((b) => b.type === 'tool_result');
        if (result) return { text: `Done: ${JSON.stringify(result.content)}` };
        if (tools.includes('mcp__backchannel__Write')) {
          return { tool: { name: 'mcp__backchannel__Write', input: { file_path: target, content: 'hello from the sub-agent\n' } } };
        }
        return { text: 'nothing to do' };
      },
    });
  });
  afterAll(async () => {
    await model.close();
    await tb.close();
  });

  test("a scripted call to the bridged Write reaches the caller's answerer; the scratch workspace is unchanged", async () => {
    const scratch = makeRepo({ 'README.md': '# scratch\n' });
    const home = tempDir('bc-cc-home-');
    const calls: Array<{ name: string; arguments: unknown }> = [];
    const run = await runTask(
      tb.broker,
      {
        command: path.join(ROOT, 'templates/claude-code/agent.mjs'),
        cwd: scratch,
        input: { prompt: 'Create hello.txt in my project', allow_writes: true },
        tools: [WRITE_TOOL],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: 'dummy',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          CLAUDE_BIN: claude.bin,
        },
        timeoutMs: 150_000,
        retries: 0,
      },
      (update, handle) => {
        if (update.kind !== 'tool_call' || !update.toolCall) return;
        const call = update.toolCall;
        calls.push({ name: call.name, arguments: call.arguments });
        // The caller runs the tool on its side (its project), then answers.
        const args = call.arguments as { file_path: string; content: string };
        fs.writeFileSync(args.file_path, args.content);
        tb.broker.answerToolCall(handle.id, call.callId, { content: `File created successfully at: ${args.file_path}` });
      },
    );
    expect(run.error, JSON.stringify(run.error?.payload)).toBeUndefined();

    // The call went to the caller, once, with the model's arguments; the file is on the caller's side.
    const target = path.join(host, 'hello.txt');
    expect(calls).toEqual([{ name: 'Write', arguments: { file_path: target, content: 'hello from the sub-agent\n' } }]);
    expect(fs.readFileSync(target, 'utf8')).toBe('hello from the sub-agent\n');

    // Claude Code offered the model the relay's tool and none of its own (Bash, Read, Edit, Write…):
    // only its never-called placeholder that keeps deferred tool loading on.
    const main = model.requests.filter((r) => (r.body.tools ?? []).some((t) => t.name === 'mcp__backchannel__Write'));
    expect(main.length).toBeGreaterThanOrEqual(2);
    for (const request of main) {
      const tools = (request.body.tools ?? []) as Array<{ name: string; defer_loading?: boolean }>;
      expect(tools.map((t) => t.name)).toEqual(['DeferredToolPlaceholder', 'mcp__backchannel__Write']);
      expect(tools[0]!.defer_loading).toBe(true);
    }
    // The caller's answer reached the model as the tool's result, and the answer is the task's.
    const answered = main.at(-1)!.body.messages!.at(-1);
    const toolResult = blocksOf(answered).find((b) => b.type === 'tool_result');
    expect(JSON.stringify(toolResult?.content)).toContain(`File created successfully at: ${target}`);
    expect((run.payload?.data as { text: string }).text).toContain('File created successfully');
    expect(run.snapshot.pendingToolCalls ?? []).toEqual([]);

    // Nothing changed where Claude Code ran.
    expect(gitIn(scratch, 'status', '--porcelain', '--untracked-files=all').trim()).toBe('');
    expect(fs.existsSync(path.join(scratch, 'hello.txt'))).toBe(false);
  });
});
