/**
 * The pure halves of the cursor-cli and claude-code templates: recorded stream-json in, neutral
 * events out. No processes here (see cli-headless.test.ts and the broker tests for those).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as claude from '../../templates/claude-code/translate.mjs';
import * as cursor from '../../templates/cursor-cli/translate.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const recording = (vendor: string, name: string) => path.join(root, 'test/fixtures/standins/recordings', vendor, name);

type Neutral = { kind: string; [key: string]: unknown };

function translate(vendor: 'cursor' | 'claude', file: string): Neutral[] {
  const translator = vendor === 'cursor' ? cursor.createCursorTranslator() : claude.createClaudeTranslator();
  const parse = vendor === 'cursor' ? cursor.parseEventLine : claude.parseEventLine;
  const out: Neutral[] = [];
  for (const line of fs.readFileSync(recording(vendor, file), 'utf8').split('\n')) {
    const event = parse(line);
    if (event !== null) out.push(...(translator.push(event) as Neutral[]));
  }
  return out;
}

describe('stream-json helpers', () => {
  it('strips CSI, OSC and cursor-visibility escapes before parsing', () => {
    expect(cursor.stripAnsi('\u001b]0;title\u0007\u001b[?25l\u001b[2K\u001b[1G{"a":1}\u001b[0m')).toBe('{"a":1}');
    expect(cursor.parseEventLine('\u001b[2K\u001b[G{"type":"x"}\r')).toEqual({ type: 'x' });
  });

  it('turns banners, blank lines, arrays and broken JSON into null instead of throwing', () => {
    for (const line of ['', '   ', '\u001b[0m', 'cursor-agent 2026.11.20', '[1,2]', '{"type":', 'null']) {
      expect(cursor.parseEventLine(line)).toBeNull();
    }
  });

  it('shortens long values and says how long they were', () => {
    expect(cursor.shorten('x'.repeat(500), 10)).toBe('xxxxxxxxxx… (500 chars)');
    expect(cursor.shorten({ a: 1 })).toBe('{"a":1}');
  });

  it('the two templates import one copy of the shared modules and vendor it, instead of committing copies', () => {
    for (const template of ['cursor-cli', 'claude-code']) {
      const dir = path.join(root, 'templates', template);
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'template.json'), 'utf8')) as { vendor: { from: string; to: string }[] };
      for (const file of ['stream-json.mjs', 'cli-process.mjs', 'run-headless.mjs']) {
        expect(fs.existsSync(path.join(dir, file)), `${template}/${file} is a committed copy`).toBe(false);
        expect(manifest.vendor).toContainEqual({ from: `templates/_shared/${file}`, to: file });
      }
      expect(fs.readFileSync(path.join(dir, 'agent.mjs'), 'utf8')).toContain("from '../_shared/run-headless.mjs'");
    }
  });
});

describe('Cursor CLI translation', () => {
  it('turns a normal run into init, text, paired tool steps and a successful result', () => {
    const events = translate('cursor', 'normal.ndjson');
    expect(events.map((e) => `${e.kind}${e.phase ? `:${e.phase}` : ''}`)).toEqual([
      'init',
      'text',
      'tool:started',
      'tool:started',
      'tool:completed',
      'tool:completed',
      'text',
      'result',
    ]);
    expect(events[0]).toMatchObject({ model: 'Claude 4.5 Sonnet', session_id: '6c1f0d2e-4b7a-4c55-9a43-1f2e3d4c5b6a' });
    const read = events.find((e) => e.phase === 'completed' && e.name === 'read');
    expect(read).toMatchObject({ call_id: 'toolu_vrtx_01Ab\nread', ok: true, args: '{"path":"README.md"}' });
    expect(String(read?.result)).toContain('"totalLines":3');
    const shell = events.find((e) => e.phase === 'completed' && e.name === 'shell');
    expect(shell).toMatchObject({ ok: true });
    expect(events.at(-1)).toMatchObject({
      kind: 'result',
      ok: true,
      meta: { session_id: '6c1f0d2e-4b7a-4c55-9a43-1f2e3d4c5b6a', duration_ms: 5234, model_used: 'Claude 4.5 Sonnet' },
    });
  });

  it('reads ANSI-decorated output exactly like the clean recording', () => {
    expect(translate('cursor', 'ansi.ndjson')).toEqual(translate('cursor', 'normal.ndjson'));
  });

  it('lets is_error decide and ignores everything after the result', () => {
    const translator = cursor.createCursorTranslator();
    const [result] = translator.push({ type: 'result', subtype: 'success', is_error: true, result: 'quota' });
    expect(result).toMatchObject({ kind: 'result', ok: false, text: 'quota' });
    expect(translator.finished).toBe(true);
    expect(translator.push({ type: 'assistant', message: { content: [{ type: 'text', text: 'late' }] } })).toEqual([]);
  });

  it('marks failed tool calls and shell commands with a non-zero exit code as not ok', () => {
    const translator = cursor.createCursorTranslator();
    translator.push({ type: 'tool_call', subtype: 'started', call_id: 'a', tool_call: { editToolCall: { args: { path: 'x' } } } });
    const [edit] = translator.push({
      type: 'tool_call',
      subtype: 'completed',
      call_id: 'a',
      tool_call: { editToolCall: { args: { path: 'x' }, result: { error: { message: 'permission denied' } } } },
    });
    expect(edit).toMatchObject({ name: 'edit', ok: false, result: 'error: permission denied' });
    const [shell] = translator.push({
      type: 'tool_call',
      subtype: 'completed',
      call_id: 'b',
      tool_call: { shellToolCall: { args: { command: 'false' }, result: { success: { exitCode: 1 } } } },
    });
    expect(shell).toMatchObject({ name: 'shell', ok: false });
  });

  it('handles function-style tool calls and keeps unmatched calls as open', () => {
    const translator = cursor.createCursorTranslator();
    const [started] = translator.push({
      type: 'tool_call',
      subtype: 'started',
      call_id: 'f1',
      tool_call: { function: { name: 'web_search', arguments: '{"q":"node"}' } },
    });
    expect(started).toMatchObject({ name: 'web_search', args: '{"q":"node"}' });
    expect(translator.openCalls).toEqual(['f1']);
  });

  it('with --stream-partial-output, emits new text as deltas and skips the duplicate flushes', () => {
    const translator = cursor.createCursorTranslator({ partialOutput: true });
    const say = (text: string, extra: object) =>
      translator.push({ type: 'assistant', message: { content: [{ type: 'text', text }] }, ...extra });
    expect(say('Hel', { timestamp_ms: 1 })).toEqual([{ kind: 'text', text: 'Hel', delta: true }]);
    expect(say('Hello', { timestamp_ms: 2, model_call_id: 'm' })).toEqual([]);
    expect(say('Hello', {})).toEqual([]);
  });

  it('reports connection and retry events as status and ignores unknown types', () => {
    const translator = cursor.createCursorTranslator();
    expect(translator.push({ type: 'connection', subtype: 'reconnecting' })).toEqual([
      { kind: 'status', message: 'connection reconnecting' },
    ]);
    expect(translator.push({ type: 'retry', subtype: 'starting', attempt: 2 })).toEqual([{ kind: 'status', message: 'retry starting 2' }]);
    expect(translator.push({ type: 'thinking', subtype: 'delta', text: 'hm' })).toEqual([]);
    expect(translator.push({ type: 'brand-new-event' })).toEqual([]);
  });

  it('recognises login failures loosely', () => {
    for (const text of [
      'Error: Not authenticated',
      'You are not logged in',
      'Authentication required.',
      'run `agent login`',
      'set CURSOR_API_KEY',
    ]) {
      expect(cursor.looksLikeAuthFailure(text)).toBe(true);
    }
    expect(cursor.looksLikeAuthFailure('stream disconnected before completion')).toBe(false);
  });

  it('builds the command line with --force only when writes are allowed', () => {
    expect(cursor.buildCursorArgs({ prompt: 'hi', workspace: '/w' })).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--trust',
      '--workspace',
      '/w',
      '--',
      'hi',
    ]);
    expect(cursor.buildCursorArgs({ prompt: '--api-key=x', model: 'gpt-5', allowWrites: true })).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--trust',
      '--model',
      'gpt-5',
      '--force',
      '--',
      '--api-key=x',
    ]);
    expect(cursor.buildCursorArgs({ prompt: 'x'.repeat(200 * 1024) })).not.toContain('--');
  });
});

describe('Claude Code translation', () => {
  it('turns a normal run into init, text, paired tool steps and a result with cost and usage', () => {
    const events = translate('claude', 'normal.ndjson');
    expect(events.map((e) => `${e.kind}${e.phase ? `:${e.phase}` : ''}`)).toEqual([
      'init',
      'text',
      'tool:started',
      'tool:completed',
      'tool:started',
      'tool:completed',
      'text',
      'result',
    ]);
    expect(events.find((e) => e.name === 'Bash' && e.phase === 'completed')).toMatchObject({
      ok: false,
      result: 'Error: no test specified',
    });
    expect(events.find((e) => e.name === 'Read' && e.phase === 'completed')).toMatchObject({ ok: true, call_id: 'toolu_01Read9' });
    expect(events.at(-1)).toMatchObject({
      kind: 'result',
      ok: true,
      meta: {
        model_used: 'claude-sonnet-4-5-20250929',
        total_cost_usd: 0.0487215,
        num_turns: 5,
        duration_ms: 9120,
        token_usage: { input: 16 + 5630 + 46180, output: 181, cache_read: 46180, cache_creation: 5630 },
        usage: { input_tokens: 16, output_tokens: 181 },
      },
    });
  });

  it('reads ANSI-decorated output exactly like the clean recording', () => {
    expect(translate('claude', 'ansi.ndjson')).toEqual(translate('claude', 'normal.ndjson'));
  });

  it('treats "subtype":"success" with is_error true as a failure (the auth recording)', () => {
    const events = translate('claude', 'auth.ndjson');
    const result = events.at(-1);
    expect(result).toMatchObject({ kind: 'result', ok: false, subtype: 'success', error: 'authentication_failed' });
    expect(claude.looksLikeAuthFailure(String(result?.text))).toBe(true);
  });

  it('reports API retries as status and takes streamed text deltas only in partial mode', () => {
    const translator = claude.createClaudeTranslator({ partialOutput: true });
    expect(
      translator.push({ type: 'system', subtype: 'api_retry', attempt: 1, max_retries: 10, error_status: 529, error: 'overloaded' }),
    ).toEqual([{ kind: 'status', message: 'API retry 1/10, status 529, overloaded' }]);
    expect(
      translator.push({ type: 'stream_event', event: { type: 'content_block_delta', delta: { type: 'text_delta', text: 'Hi' } } }),
    ).toEqual([{ kind: 'text', text: 'Hi', delta: true }]);
    expect(translator.push({ type: 'assistant', message: { content: [{ type: 'text', text: 'Hi there' }] } })).toEqual([]);
  });

  it("turns the real Claude Code's thinking into thinking events, whole or as deltas, never into the answer", () => {
    const thinkingOf = (file: string, partialOutput: boolean) => {
      const translator = claude.createClaudeTranslator({ partialOutput });
      const lines = fs.readFileSync(path.join(root, 'test/fixtures/recordings/bridge', file), 'utf8').split('\n');
      const out = lines.flatMap((line) => {
        const event = claude.parseEventLine(line);
        return event === null ? [] : (translator.push(event) as Neutral[]);
      });
      return { thinking: out.filter((e) => e.kind === 'thinking').map((e) => e.text), result: out.find((e) => e.kind === 'result') };
    };
    // Recorded with 2.1.332 and a model whose reply starts with a thinking block (README.md there).
    const whole = thinkingOf('claude-code-2.1.332-thinking.ndjson', false);
    expect(whole.thinking).toEqual(['The user wants a greeting. I will say hi.']);
    expect(whole.result).toMatchObject({ ok: true, text: 'Hi there.' });
    const partial = thinkingOf('claude-code-2.1.332-thinking-partial.ndjson', true);
    expect(partial.thinking).toEqual(['The user wants a gre', 'eting. I will say hi.']);
    expect(partial.result).toMatchObject({ ok: true, text: 'Hi there.' });
    // A sub-agent's thinking is not the main agent's.
    const delta = { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } };
    expect(
      claude.createClaudeTranslator({ partialOutput: true }).push({ type: 'stream_event', event: delta, parent_tool_use_id: 'toolu_1' }),
    ).toEqual([]);
  });

  it("in bridge mode, stops at once when Claude Code's init says the relay failed to start (it would go on without the tools)", () => {
    const file = path.join(root, 'test/fixtures/recordings/bridge/claude-code-2.1.332-bridge.ndjson');
    const init = JSON.parse(fs.readFileSync(file, 'utf8').split('\n')[0]!) as { mcp_servers: Array<{ name: string; status: string }> };
    expect(init.mcp_servers).toEqual([{ name: 'backchannel', status: 'connected', source: 'dynamic' }]);
    const kinds = (options: { mcpServer?: string }, event: object) =>
      claude
        .createClaudeTranslator(options)
        .push(event)
        .map((e: { kind: string }) => e.kind);
    expect(kinds({ mcpServer: 'backchannel' }, init)).toEqual(['init']);
    const failed = { ...init, mcp_servers: [{ name: 'backchannel', status: 'failed', source: 'dynamic' }] };
    expect(kinds({ mcpServer: 'backchannel' }, failed)).toEqual(['init', 'fatal']);
    expect(claude.createClaudeTranslator({ mcpServer: 'backchannel' }).push(failed)[1]).toMatchObject({
      kind: 'fatal',
      message: expect.stringMatching(/^the MCP relay for the task's tools failed to start in Claude Code/),
    });
    expect(kinds({ mcpServer: 'backchannel' }, { ...init, mcp_servers: [] })).toEqual(['init', 'fatal']);
    expect(kinds({}, failed)).toEqual(['init']);
  });

  it("builds the command line with --verbose, only the owner's settings, and a permission mode only when asked", () => {
    expect(claude.buildClaudeArgs({ prompt: 'hi' })).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--setting-sources',
      'user',
      '--',
      'hi',
    ]);
    expect(claude.buildClaudeArgs({ prompt: '--help', allowWrites: true, maxTurns: 3 })).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
      'acceptEdits',
      '--max-turns',
      '3',
      '--setting-sources',
      'user',
      '--',
      '--help',
    ]);
    // The owner's extra arguments (never the input's) come after.
    const owner = claude.buildClaudeArgs({ prompt: 'hi', extraArgs: ['--setting-sources', 'user,project'] });
    expect(owner.slice(owner.indexOf('--setting-sources'), -2)).toEqual(['--setting-sources', 'user', '--setting-sources', 'user,project']);
  });

  it('Claude Code 2.1.332: a plain answer with API model ids and run-level usage', () => {
    const events = translate('claude', 'cc-2.1.332-say-hi.ndjson');
    expect(events[0]).toMatchObject({ kind: 'init', model: 'claude-opus-5-5' });
    expect(events.at(-1)).toMatchObject({ kind: 'result', ok: true, final: true, meta: { model_used: 'claude-opus-5-5' } });
  });

  it('Claude Code 2.1.332 with a background sub-agent: two results, the last one final; sub-agent text is not the answer', () => {
    const events = translate('claude', 'cc-2.1.332-background-subagent.ndjson');
    const results = events.filter((e) => e.kind === 'result');
    expect(results.map((r) => [r.index, r.text])).toEqual([
      [0, 'I launched a background agent; I will report when it finishes.'],
      [1, 'Final answer: the background agent found 42.'],
    ]);
    expect(results.at(-1)).toMatchObject({ final: true, meta: { token_usage: { input: 490, output: 68, total: 558 } } });
    expect(events.filter((e) => e.kind === 'init')).toHaveLength(1);
    const subagent = events.filter((e) => e.kind === 'subagent');
    expect(subagent.length).toBeGreaterThan(0);
    const answerText = events.filter((e) => e.kind === 'text').map((e) => e.text);
    for (const s of subagent) expect(answerText).not.toContain(s.text);
    expect(events.some((e) => e.kind === 'status' && String(e.message).startsWith('background task'))).toBe(true);
  });

  it('Claude Code 2.1.332: a 401 API retry is fatal at once, with the login cause', () => {
    const events = translate('claude', 'cc-2.1.332-auth401-maxretries1.ndjson');
    expect(events.find((e) => e.kind === 'fatal')).toEqual({
      kind: 'fatal',
      auth: true,
      message: 'the API refused the credentials (status 401, authentication_failed)',
    });
  });

  it('Claude Code 2.1.197: the display name with a suffix becomes a model id', () => {
    const events = translate('claude', 'cc-2.1.197-say-hi.ndjson');
    expect(String(events[0]?.model)).not.toMatch(/\[/);
    expect(claude.modelId('claude-opus-4-8[1m]')).toBe('claude-opus-4-8');
  });

  it('Claude Code 2.1.332 partial mode: token deltas from stream_event, the same text as whole messages', () => {
    const whole = translate('claude', 'cc-2.1.332-partial.ndjson')
      .filter((e) => e.kind === 'text')
      .map((e) => e.text)
      .join('');
    const translator = claude.createClaudeTranslator({ partialOutput: true });
    let streamed = '';
    for (const line of fs.readFileSync(recording('claude', 'cc-2.1.332-partial.ndjson'), 'utf8').split('\n')) {
      const event = claude.parseEventLine(line);
      if (event) for (const out of translator.push(event) as Neutral[]) if (out.kind === 'text') streamed += String(out.text);
    }
    expect(streamed).toBe(whole);
    expect(streamed.length).toBeGreaterThan(0);
  });
});
