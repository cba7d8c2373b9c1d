/**
 * Bridge mode through the official Node SDKs (`openai`, `@anthropic-ai/sdk`) against the stand-in
 * agent's `bridge` mode (a real agent process calling `task.callTool`): the agent's tool call ends
 * the response in each API's own shape, streamed and not; the client's results continue the same
 * task; parallel calls, a replayed history, the guard, bad results and a client that never answers.
 */
import fs from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, test } from 'vitest';
import { spawnSync } from 'node:child_process';
import { summarize } from '../../src/mcp/snapshots.js';
import { createTestBroker, fixture, tempDir, waitFor } from '../helpers/core.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { raw, standinModels, startTestGateway } from './helpers.js';

const READ_SCHEMA = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
const CHAT_TOOLS = [{ type: 'function' as const, function: { name: 'read_file', description: 'Reads a file', parameters: READ_SCHEMA } }];
const RESPONSES_TOOLS = [
  { type: 'function' as const, name: 'read_file', description: 'Reads a file', parameters: READ_SCHEMA, strict: false },
];
const MESSAGES_TOOLS = [{ name: 'read_file', description: 'Reads a file', input_schema: READ_SCHEMA as Anthropic.Tool.InputSchema }];
const TASK_ID = 'x-backchannel-task-id';
const BIN = path.join(import.meta.dirname, '..', '..', 'bin', 'backchannel.js');

async function gateway(extra: Record<string, unknown> = {}, clock?: FakeClock) {
  const dir = tempDir('bc-gwb-');
  const gw = await startTestGateway(
    { models: standinModels(dir), default_model: 'bridge', ...extra },
    { dir, ...(clock ? { clock } : {}) },
  );
  return {
    gw,
    dir,
    openai: new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: gw.url, apiKey: 'none', maxRetries: 0 }),
  };
}

/** What the client's tool returns for a call's arguments. */
const toolOutput = (args: string | unknown) => {
  const parsed = (typeof args === 'string' ? JSON.parse(args) : args) as { path: string };
  return `contents of ${parsed.path}`;
};

describe('Chat Completions', () => {
  test('non-streamed: the call ends the response with tool_calls; the result continues the same task to its answer', async () => {
    const { openai } = await gateway();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Read the file.' }];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    const choice = first.data.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Let me look. ');
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({ type: 'function', function: { name: 'read_file' } });
    expect(call.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(JSON.parse(call.function.arguments)).toEqual({ path: 'a.txt' });
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: toolOutput(call.function.arguments) });
    const second = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    expect(second.data.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'done: "contents of a.txt"' } });
    expect(second.response.headers.get(TASK_ID)).toBe(first.response.headers.get(TASK_ID));
  });

  test('streamed: a parallel pair arrives as delta.tool_calls chunks with finish_reason tool_calls; the results continue', async () => {
    const { openai } = await gateway();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Read both files. PARALLEL' }];
    const seen: string[] = [];
    // The pair comes in one step; on a machine too busy to deliver the agent's second call within the
    // gather window it comes in the next response instead: either way every call reaches the client once.
    for (let step = 0; step < 3; step++) {
      const stream = openai.chat.completions.stream({ model: 'bridge', messages, tools: CHAT_TOOLS, stream: true });
      const chunks: string[] = [];
      for await (const chunk of stream)
        if (chunk.choices[0]?.delta.tool_calls) chunks.push(...chunk.choices[0].delta.tool_calls.map((c) => (c.id ? 'start' : 'args')));
      const completion = await stream.finalChatCompletion();
      const choice = completion.choices[0]!;
      if (choice.finish_reason === 'stop') {
        expect(choice.message.content).toBe('done: "contents of a.txt" | "contents of b.txt"');
        break;
      }
      expect(choice.finish_reason).toBe('tool_calls');
      const calls = choice.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
      expect(chunks).toEqual(calls.flatMap(() => ['start', 'args']));
      seen.push(...calls.map((c) => JSON.parse(c.function.arguments).path));
      messages.push(
        choice.message,
        ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: toolOutput(c.function.arguments) })),
      );
    }
    expect(seen.sort()).toEqual(['a.txt', 'b.txt']);
    expect(messages.at(-1)).toMatchObject({ role: 'tool' });
  });

  test('a result for a call no assistant message made is a 400 naming it', async () => {
    const { openai } = await gateway();
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Read the file.' },
      { role: 'tool', tool_call_id: 'call_nobody_made', content: 'x' },
    ];
    const error = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain('call_nobody_made');
  });
});

describe('Responses', () => {
  test('streamed: function_call items with argument events; the function_call_output continues the same task', async () => {
    const { openai } = await gateway();
    const stream = openai.responses.stream({
      model: 'bridge',
      input: 'Read the file.',
      tools: RESPONSES_TOOLS,
      reasoning: { summary: 'auto' },
    });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const response = await stream.finalResponse();
    expect(types).toContain('response.function_call_arguments.delta');
    expect(types).toContain('response.function_call_arguments.done');
    expect(types).toContain('response.reasoning_summary_text.delta');
    const reasoning = response.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.summary[0]!.text).toBe('Thinking about it.');
    const call = response.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'read_file', status: 'completed' });
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Read the file.' },
      { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: toolOutput(call.arguments) },
    ];
    const done = await openai.responses.create({ model: 'bridge', input, tools: RESPONSES_TOOLS });
    expect(done.output_text).toBe('done: "contents of a.txt"');
    expect(done.output.some((item) => item.type === 'reasoning')).toBe(false); // not asked this time
  });

  test('non-streamed: the response holds the function_call item (no reasoning unless asked)', async () => {
    const { openai } = await gateway();
    const response = await openai.responses.create({ model: 'bridge', input: 'Read the file.', tools: RESPONSES_TOOLS });
    expect(response.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(response.output_text).toBe('Let me look. ');
  });
});

describe('Anthropic Messages', () => {
  test('streamed with thinking: a thinking block with its signature, then tool_use with input_json_delta and stop_reason tool_use', async () => {
    const { anthropic } = await gateway();
    const params = {
      model: 'bridge',
      max_tokens: 1000,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      tools: MESSAGES_TOOLS,
      messages: [{ role: 'user' as const, content: 'Read the file.' }] as Anthropic.MessageParam[],
    };
    const stream = anthropic.messages.stream(params);
    const deltas: string[] = [];
    stream.on('streamEvent', (event) => void (event.type === 'content_block_delta' && deltas.push(event.delta.type)));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about it.' });
    expect((message.content[0] as Anthropic.ThinkingBlock).signature).not.toBe('');
    expect(deltas).toEqual(['thinking_delta', 'signature_delta', 'text_delta', 'input_json_delta']);
    const use = message.content[2] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ name: 'read_file', input: { path: 'a.txt' } });
    expect(use.id).toMatch(/^toolu_/);
    params.messages.push(
      { role: 'assistant', content: message.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: toolOutput(use.input) }] },
    );
    const done = await anthropic.messages.stream(params).finalMessage();
    expect(done.stop_reason).toBe('end_turn');
    expect(done.content.filter((b) => b.type === 'text').map((b) => (b as Anthropic.TextBlock).text)).toEqual([
      'done: "contents of a.txt"',
    ]);
  });

  test('non-streamed, two steps: each step ends with tool_use, one task serves the whole turn; no thinking unless asked', async () => {
    const { anthropic } = await gateway();
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Read it. TWICE' }];
    const ids = new Set<string | null>();
    const texts: string[] = [];
    for (const expected of ['a.txt', 'c.txt']) {
      const { data, response } = await anthropic.messages
        .create({ model: 'bridge', max_tokens: 100, tools: MESSAGES_TOOLS, messages })
        .withResponse();
      ids.add(response.headers.get(TASK_ID));
      expect(data.stop_reason).toBe('tool_use');
      expect(data.content.some((b) => b.type === 'thinking')).toBe(false);
      const use = data.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      expect(use.input).toEqual({ path: expected });
      texts.push(
        data.content
          .filter((b) => b.type === 'text')
          .map((b) => (b as Anthropic.TextBlock).text)
          .join(''),
      );
      messages.push(
        { role: 'assistant', content: data.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: toolOutput(use.input) }] },
      );
    }
    const { data, response } = await anthropic.messages
      .create({ model: 'bridge', max_tokens: 100, tools: MESSAGES_TOOLS, messages })
      .withResponse();
    ids.add(response.headers.get(TASK_ID));
    expect(texts).toEqual(['Let me look. ', 'Once more. ']);
    expect(data.content).toMatchObject([{ type: 'text', text: 'done: "contents of a.txt" | "contents of c.txt"' }]);
    expect(ids.size).toBe(1);
  });
});

describe('a tool_choice that forces a call is honoured (docs/gateway.md, "Forced tool calls")', () => {
  const NOTE_SCHEMA = { type: 'object', properties: { path: { type: 'string' } } };

  test('Anthropic `{type: "tool", name}`: the agent is told, and the response calls that tool', async () => {
    const { anthropic, dir } = await gateway();
    const tools = [...MESSAGES_TOOLS, { name: 'write_note', input_schema: NOTE_SCHEMA as Anthropic.Tool.InputSchema }];
    const { data, response } = await anthropic.messages
      .create({
        model: 'bridge',
        max_tokens: 100,
        tools,
        tool_choice: { type: 'tool', name: 'write_note' },
        messages: [{ role: 'user', content: 'Note it.' }],
      })
      .withResponse();
    expect(data.stop_reason).toBe('tool_use');
    expect(data.content.filter((b) => b.type === 'tool_use').map((b) => (b as Anthropic.ToolUseBlock).name)).toEqual(['write_note']);
    const prompt = fs.readFileSync(path.join(dir, `prompt-${response.headers.get(TASK_ID)}.txt`), 'utf8');
    expect(prompt).toContain("The client requires a tool call now (tool_choice): call the client's tool `write_note`");
  });

  test('Responses, a named function: a call to another tool first is corrected, never sent; the named one is', async () => {
    const { openai } = await gateway();
    const tools = [...RESPONSES_TOOLS, { type: 'function' as const, name: 'write_note', parameters: NOTE_SCHEMA, strict: false }];
    const response = await openai.responses.create({
      model: 'bridge',
      input: 'Note it. WRONGFIRST',
      tools,
      tool_choice: { type: 'function', name: 'write_note' },
    });
    const calls = response.output.filter((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall[];
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['write_note', { path: 'a.txt' }]]);
  });

  test('Chat `required`, Anthropic `any`: an agent that answers with text fails with a 502 `tool_call_missing`, not a 200', async () => {
    const { openai, anthropic } = await gateway();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Answer. NOCALL' }];
    const chat = await openai.chat.completions
      .create({ model: 'bridge', messages, tools: CHAT_TOOLS, tool_choice: 'required' })
      .catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.APIError);
    expect(chat).toMatchObject({ status: 502, code: 'tool_call_missing' });
    expect((chat as Error).message).toContain('requires a tool call');
    const streamed = openai.chat.completions.stream({
      model: 'bridge',
      messages,
      tools: CHAT_TOOLS,
      tool_choice: 'required',
      stream: true,
    });
    expect(await streamed.finalChatCompletion().catch((e: unknown) => e)).toBeInstanceOf(OpenAI.APIError);
    const params = {
      model: 'bridge',
      max_tokens: 100,
      tools: MESSAGES_TOOLS,
      messages: [{ role: 'user' as const, content: 'Answer. NOCALL' }],
    };
    const any = await anthropic.messages.create({ ...params, tool_choice: { type: 'any' } }).catch((e: unknown) => e);
    expect(any).toBeInstanceOf(Anthropic.InternalServerError);
    expect((any as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    // A tool_choice naming a tool the request does not offer is a 400, as the API answers it.
    const unknown = await anthropic.messages.create({ ...params, tool_choice: { type: 'tool', name: 'nope' } }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
    expect((unknown as Error).message).toContain('`nope`');
    // `none` forbids calls: the bridged model answers in text only, offered no tools.
    const none = await anthropic.messages.create({
      ...params,
      messages: [{ role: 'user', content: 'Answer.' }],
      tool_choice: { type: 'none' },
    });
    expect(none).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'text only, offered: 0' }] });
    const chatNone = await openai.chat.completions.create({
      model: 'bridge',
      messages: [{ role: 'user', content: 'Answer.' }],
      tools: CHAT_TOOLS,
      tool_choice: 'none',
    });
    expect(chatNone.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'text only, offered: 0' } });
    // Without a forcing tool_choice the same text is the answer.
    const auto = await anthropic.messages.create({ ...params, tool_choice: { type: 'auto' } });
    expect(auto.content).toMatchObject([{ type: 'text', text: 'no call' }]);
  });
});

describe('when a run cannot simply continue', () => {
  test('an edited history retires the agent and replays the whole transcript to a new one', async () => {
    const { gw, openai, dir } = await gateway();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Read the file.' }];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    const message = first.data.choices[0]!.message;
    const call = message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    const edited: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Read the file, please.' },
      message,
      { role: 'tool', tool_call_id: call.id, content: 'contents of a.txt' },
    ];
    const second = await openai.chat.completions.create({ model: 'bridge', messages: edited, tools: CHAT_TOOLS }).withResponse();
    const replayed = second.response.headers.get(TASK_ID)!;
    expect(replayed).not.toBe(first.response.headers.get(TASK_ID));
    const prompt = fs.readFileSync(path.join(dir, `prompt-${replayed}.txt`), 'utf8');
    expect(prompt).toContain('Read the file, please.');
    expect(prompt).toContain('contents of a.txt');
    expect(second.data.choices[0]!.finish_reason).toBe('tool_calls'); // the new agent starts its own step
    // The retired run counts as replayed in its task's meta (and so in stats).
    const retired = await gw.client.follow(first.response.headers.get(TASK_ID)!);
    await retired.finished;
    expect(retired.snapshot().annotations).toEqual({ bridge_guard: { violations: 0, corrections: 0, unknown_tools: 0, replays: 1 } });
  });

  test("an SDK's retry of a request that ended with tool calls joins the run: the same calls, the same task, no second agent", async () => {
    const { gw } = await gateway();
    const body = { model: 'bridge', tools: CHAT_TOOLS, messages: [{ role: 'user', content: 'Read the file.' }] };
    const first = await raw(`${gw.baseURL}/chat/completions`, body, { headers: { 'x-stainless-retry-count': '0' } });
    const retry = await raw(`${gw.baseURL}/chat/completions`, body, { headers: { 'x-stainless-retry-count': '1' } });
    expect(retry.json.choices[0].message.tool_calls).toEqual(first.json.choices[0].message.tool_calls);
    expect(retry.headers[TASK_ID]).toBe(first.headers[TASK_ID]);
    expect(await gw.client.listTasks()).toHaveLength(1);
  });

  test('a client that never sends the results: the run is cancelled after the idle time and nothing is left running', async () => {
    const { gw, openai } = await gateway({ sessions: { max: 8, idle_ms: 300 } });
    const first = await openai.chat.completions
      .create({ model: 'bridge', messages: [{ role: 'user', content: 'Read.' }], tools: CHAT_TOOLS })
      .withResponse();
    const id = first.response.headers.get(TASK_ID)!;
    const task = await gw.client.follow(id);
    const final = await task.result.catch((error: unknown) => error);
    await task.finished;
    expect(task.snapshot()).toMatchObject({ state: 'cancelled' });
    expect(String((final as Error).message)).toMatch(/no tool results in time/);
    const health = await raw(`${gw.url}/health`);
    // Counted since the gateway started; none alive now.
    expect(health.json.bridge).toMatchObject({ runs: 1, active: 0, suspended: 0 });
  });

  test('a run still waiting on its client at the request timeout is cancelled as such, its partial kept; the late results get a clear error once (Y4)', async () => {
    const clock = new FakeClock(Date.now());
    const { gw, openai } = await gateway({ request_timeout_ms: 60_000 }, clock);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Read the file.' }];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    const message = first.data.choices[0]!.message;
    const id = first.response.headers.get(TASK_ID)!;
    const task = await gw.client.follow(id);
    // The client sits on its permission prompt past request_timeout_ms (sessions.idle_ms is 15 min).
    clock.advance(60_000);
    await waitFor(() => task.snapshot().state === 'cancelled', 'the waiting run to be cancelled', 10_000);
    const final = await task.result.catch((error: unknown) => error);
    await task.finished;
    expect(task.snapshot()).toMatchObject({ state: 'cancelled' });
    expect(String((final as Error).message)).toContain('the client sent no tool results within the gateway request timeout (60000 ms)');
    expect(JSON.stringify(task.snapshot().lastPartial)).toContain('Let me look. ');
    expect((await raw(`${gw.url}/health`)).json.bridge).toMatchObject({ active: 0, suspended: 0 });

    // The client's results come at last: an error in the API's shape says why, and nothing runs.
    const call = message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    messages.push(message, { role: 'tool', tool_call_id: call.id, content: toolOutput(call.function.arguments) });
    const late = await raw(`${gw.baseURL}/chat/completions`, { model: 'bridge', messages, tools: CHAT_TOOLS });
    expect(late.status).toBe(504);
    expect(late.headers['x-should-retry']).toBe('false');
    expect(late.json.error).toMatchObject({ type: 'api_error', code: 'tool_results_too_late' });
    expect(late.json.error.message).toMatch(
      /came too late.*waited for the client's tool results longer than the request timeout \(60000 ms\)/s,
    );
    expect(await gw.client.listTasks()).toHaveLength(1);
    // Once: the same request again replays the conversation to a new sub-agent.
    const again = await raw(`${gw.baseURL}/chat/completions`, { model: 'bridge', messages, tools: CHAT_TOOLS });
    expect(again.status).toBe(200);
    expect(again.headers[TASK_ID]).not.toBe(id);
  });

  test('a call to a tool the client did not offer, and one naming the scratch workspace, get corrective results; the guard is counted', async () => {
    const { gw, openai } = await gateway({ session_workspaces: true });
    const env = '<env>\nWorking directory: /home/user/project\nPlatform: linux\n</env>';
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: env },
      { role: 'user', content: 'Read it. UNOFFERED SCRATCH' },
    ];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS });
    const message = first.choices[0]!.message;
    const calls = message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => JSON.parse(c.function.arguments))).toEqual([{ path: 'a.txt' }]); // neither bad call reached the client
    messages.push(message, { role: 'tool', tool_call_id: calls[0]!.id, content: 'A'.repeat(10 * 1024 * 1024) });
    const done = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS });
    const text = done.choices[0]!.message.content!;
    expect(text).toContain(`done: ${10 * 1024 * 1024} chars`);
    expect(text).toMatch(/unoffered: tool call not_offered failed: .*not_offered/);
    expect(text).toMatch(/scratch: tool call read_file failed: Not run: `command` names .* in \/home\/user\/project/);
    const health = await raw(`${gw.url}/health`, undefined, { headers: { Authorization: 'Bearer none' } });
    expect(health.json.bridge).toMatchObject({ violations: 1, corrections: 1 });
  });

  test("started in the client's project (`cd <project> && backchannel gateway`), the agent still runs in a private scratch directory", async () => {
    const project = tempDir('bc-gwb-project-');
    const root = path.join(tempDir('bc-gwb-ws-'), 'scratch');
    // `workspace` is where the gateway started; the model's `cwd` the project too: neither is a scratch directory.
    const dir = tempDir('bc-gwb-');
    const models = standinModels(dir) as Record<string, { env: Record<string, string> }>;
    const gw = await startTestGateway(
      { models: { bridge: { ...models.bridge, cwd: project } }, default_model: 'bridge', workspace: project, workspaces_dir: root },
      { dir },
    );
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0 });
    // Claude Code 2.1.332's environment message, naming the project.
    const env = fs.readFileSync(fixture('gateway/client-env/claude-code-2.1.332.txt'), 'utf8').replaceAll('/home/user/project', project);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: env },
      { role: 'user', content: 'Read it. SCRATCH' },
    ];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    const id = first.response.headers.get(TASK_ID)!;
    const prompt = fs.readFileSync(path.join(dir, `prompt-${id}.txt`), 'utf8');
    expect(prompt).toContain(`in ${project}.`); // anchored on the project
    const message = first.data.choices[0]!.message;
    const calls = message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    // The agent's `cd <its cwd> && ls` named its scratch directory, not the project: corrected, never sent.
    expect(calls.map((c) => JSON.parse(c.function.arguments))).toEqual([{ path: 'a.txt' }]);
    messages.push(message, { role: 'tool', tool_call_id: calls[0]!.id, content: 'A' });
    const done = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS });
    const scratch = /Not run: `command` names (\S+), your scratch directory/.exec(done.choices[0]!.message.content!)?.[1];
    expect(scratch, done.choices[0]!.message.content!).toBeDefined();
    expect(path.dirname(scratch!)).toBe(root);
    expect(scratch).not.toBe(project);
    expect(fs.readdirSync(project)).toEqual([]);
    // The scratch directory's rules file states the topology.
    expect(fs.readFileSync(path.join(scratch!, 'AGENTS.md'), 'utf8')).toContain(`in ${project}.`);
  });

  test("the guard's counts of a bridged task go into its meta (through the client); `show` prints them and `stats` sums them from the journal", async () => {
    const state = tempDir('bc-gwb-state-');
    const dataDir = path.join(state, 'backchannel');
    const { broker } = createTestBroker({ dataDir });
    const dir = tempDir('bc-gwb-');
    const gw = await startTestGateway({ models: standinModels(dir), default_model: 'bridge', session_workspaces: true }, { dir, broker });
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: 'none', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: '<env>\nWorking directory: /home/user/project\nPlatform: linux\n</env>' },
      { role: 'user', content: 'Read it. UNOFFERED SCRATCH' },
    ];
    const first = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    const id = first.response.headers.get(TASK_ID)!;
    const message = first.data.choices[0]!.message;
    const calls = message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    // The unoffered call is refused by the broker itself (docs/protocol.md §6.1): it never reaches the gateway.
    const counts = { violations: 1, corrections: 1, unknown_tools: 0, replays: 0 };
    // Written before the agent heard its corrections: already there while the run waits on the client.
    expect((await gw.client.getTask(id)).task.annotations).toEqual({ bridge_guard: counts });
    messages.push(message, { role: 'tool', tool_call_id: calls[0]!.id, content: 'A' });
    const done = await openai.chat.completions.create({ model: 'bridge', messages, tools: CHAT_TOOLS }).withResponse();
    expect(done.response.headers.get(TASK_ID)).toBe(id);
    const task = await gw.client.follow(id);
    const final = await task.result;
    await task.finished;
    expect(final.meta).toMatchObject({ bridge_guard: counts });
    expect(summarize(task.snapshot()).annotations).toEqual({ bridge_guard: counts });
    await broker.close();
    const stats = spawnSync(process.execPath, [BIN, 'stats', '--json', '--data-dir', dataDir], { encoding: 'utf8' });
    expect(stats.stderr).toBe('');
    expect((JSON.parse(stats.stdout) as { bridgeGuard?: unknown }).bridgeGuard).toEqual(counts);
    // `show` (the history on disk, no hub running) prints them as they are.
    const env = { ...process.env, XDG_STATE_HOME: state, BACKCHANNEL_CONTROL: '' };
    const shown = spawnSync(process.execPath, [BIN, 'show', id], { encoding: 'utf8', env });
    expect(shown.stdout).toContain(`annotations  ${JSON.stringify({ bridge_guard: counts })}\n`);
    const text = spawnSync(process.execPath, [BIN, 'stats', '--data-dir', dataDir], { encoding: 'utf8' });
    expect(text.stdout).toContain(
      "Bridge mode's scratch-path guard: 1 tool call(s) named the scratch workspace, 1 corrected; 0 call(s) to tools the client did not offer; 0 run(s) replayed to a new agent.",
    );
  });
});
