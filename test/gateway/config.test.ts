/** Config loading, request checking, prompt building, answer deltas and model-list parsing: pure parts. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { AnswerStream, finalText, usageOf } from '../../src/gateway/answer.js';
import {
  cursorAgentPath,
  gatewayConfigFromSection,
  GatewayConfigError,
  loadGatewayConfig,
  resolveGatewayConfig,
} from '../../src/gateway/config.js';
import { parseModelList } from '../../src/gateway/cursor-cli.js';
import { buildPrompt, InvalidRequest, parseChatRequest } from '../../src/gateway/request.js';
import { tempDir } from '../helpers/core.js';

describe('config', () => {
  test('with no file at the default path, every default applies, and a key is generated once (0600)', () => {
    const home = process.env.HOME;
    const dir = tempDir();
    process.env.HOME = dir; // os.homedir() reads it
    let config;
    let again;
    try {
      config = loadGatewayConfig(undefined, {});
      again = loadGatewayConfig(undefined, {});
    } finally {
      process.env.HOME = home;
    }
    expect(config.source).toBeUndefined();
    expect(config).toMatchObject({
      port: 8976,
      defaultModel: 'cursor-cli',
      requestTimeoutMs: 300_000,
      maxConcurrent: 5,
      cursorCliPath: 'agent',
      listCliModels: true,
      models: { 'cursor-cli': { kind: 'cursor-cli', allowWrites: false } },
    });
    const keyFile = path.join(dir, '.config/backchannel/gateway-key');
    expect(config).toMatchObject({ keyFile, keyCreated: true, auth: 'key', maxQueued: 20, maxConnections: 64 });
    expect(config.apiKey).toMatch(/^bc-[0-9a-f]{48}$/);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(again).toMatchObject({ apiKey: config.apiKey, keyCreated: false });
    expect(loadGatewayConfig(undefined, { XDG_CONFIG_HOME: path.join(dir, 'x') }).keyFile).toBe(
      path.join(dir, 'x/backchannel/gateway-key'),
    );
    expect(fs.existsSync(cursorAgentPath())).toBe(true);
  });

  test('a generated key file others can read, or a symlink, is refused; auth: none turns the key off', () => {
    const dir = tempDir();
    const loose = path.join(dir, 'loose');
    fs.writeFileSync(loose, 'k\n', { mode: 0o644 });
    expect(() => loadGatewayConfig(undefined, { BACKCHANNEL_GATEWAY_KEY_FILE: loose, HOME: dir })).toThrow(/chmod 600/);
    fs.symlinkSync(loose, path.join(dir, 'link'));
    expect(() => loadGatewayConfig(undefined, { BACKCHANNEL_GATEWAY_KEY_FILE: path.join(dir, 'link') })).toThrow(/ELOOP|symbolic/);
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(file, 'auth: none\n');
    expect(loadGatewayConfig(file, { BACKCHANNEL_GATEWAY_KEY_FILE: path.join(dir, 'never') }).apiKey).toBeUndefined();
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  test('a YAML file sets models, key and limits; relative paths are resolved against the file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(
      file,
      [
        'port: 9000',
        'api_key: k-123',
        'default_model: mine',
        'request_timeout_ms: 60000',
        'max_concurrent: 2',
        'cursor_cli_path: ./bin/agent',
        'models:',
        '  fast: { cli_model: gpt-5, allow_writes: true }',
        '  mine:',
        '    command: ./agents/mine.mjs',
        '    args: [--verbose]',
        '    env: { LEVEL: 3 }',
      ].join('\n'),
    );
    const config = loadGatewayConfig(file);
    expect(config).toMatchObject({
      port: 9000,
      apiKey: 'k-123',
      defaultModel: 'mine',
      requestTimeoutMs: 60_000,
      maxConcurrent: 2,
      source: file,
    });
    expect(config.cursorCliPath).toBe(path.join(dir, 'bin/agent'));
    expect(config.models.fast).toEqual({ kind: 'cursor-cli', cliModel: 'gpt-5', allowWrites: true, env: {} });
    expect(config.models.mine).toEqual({
      kind: 'command',
      command: path.join(dir, 'agents/mine.mjs'),
      args: ['--verbose'],
      allowWrites: false,
      env: { LEVEL: '3' },
    });
  });

  test('the CLI path comes from the config, else CURSOR_AGENT_BIN, else `agent`', () => {
    expect(resolveGatewayConfig({}, { CURSOR_AGENT_BIN: 'cursor-agent' }).cursorCliPath).toBe('cursor-agent');
    expect(resolveGatewayConfig({ cursor_cli_path: 'agent2' }, { CURSOR_AGENT_BIN: 'cursor-agent' }).cursorCliPath).toBe('agent2');
  });

  test.each([
    [{ port: 'eighty' }, /`port` to be an integer/],
    [{ max_concurrent: 0 }, /`max_concurrent`/],
    [{ prot: 1 }, /unknown config key\(s\): prot/],
    [{ models: { x: { command: 'a', template: 'cursor-cli' } } }, /either `command` or `template`/],
    [{ models: { x: { args: 'no', command: 'a' } } }, /models\.x\.args/],
    [{ models: { x: { template: 'claude' } } }, /"cursor-cli" and "claude-code" are built in/],
    [{ models: { x: { command: 'a', agent: 'cursor-cli' } } }, /either `command` or `agent`/],
    [{ models: { x: { agent: 'claude' } } }, /models\.x\.agent`: "cursor-cli" and "claude-code" are built in/],
    [{ models: { x: { agent: 'claude-code', template: 'claude-code' } } }, /`template` is the old name of `agent`; give only `agent`/],
    [{ auth: 'maybe' }, /`auth` to be one of key, none/],
    [{ side_requests: '' }, /side_requests/],
    [{ sessions: { ttl: 1 } }, /unknown key\(s\) in `sessions`/],
  ])('rejects %j', (raw, message) => {
    expect(() => resolveGatewayConfig(raw)).toThrow(GatewayConfigError);
    expect(() => resolveGatewayConfig(raw)).toThrow(message);
  });

  test('`agent:` names the built-in agent; `template:`, its old name, still works', () => {
    const config = resolveGatewayConfig({ models: { a: { agent: 'claude-code' }, t: { template: 'claude-code' }, d: {} } });
    expect(config.models.a!.kind).toBe('claude-code');
    expect(config.models.t!.kind).toBe('claude-code');
    expect(config.models.d!.kind).toBe('cursor-cli');
  });

  test('a config file named explicitly must exist', () => {
    expect(() => loadGatewayConfig('/nonexistent/config.yaml')).toThrow(/not found/);
  });

  test("a problem in the one file's gateway section names the file and the field's whole place", () => {
    expect(() => gatewayConfigFromSection({ port: 'x' }, '/c/config.yaml', {})).toThrow(
      /^\/c\/config\.yaml: Expected `gateway\.port` to be an integer from 0 to 65535, got `x` \(string\)$/,
    );
    expect(() => gatewayConfigFromSection({ models: { coder: { base: 'main' } } }, '/c/config.yaml', {})).toThrow(
      '/c/config.yaml: `gateway.models.coder.base` is the base of a worktree',
    );
  });
});

describe('requests and prompts', () => {
  test('a single user message is the prompt as it is', () => {
    const request = parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'Explain src/' }] });
    expect(buildPrompt(request.messages)).toBe('Explain src/');
    expect(request).toMatchObject({ model: 'm', stream: false, includeUsage: false });
  });

  test('a conversation keeps every role, tool calls and names', () => {
    const request = parseChatRequest({
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at ' },
            { type: 'image_url', image_url: { url: 'x' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"p":1}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'file text' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(request).toMatchObject({ model: undefined, stream: true, includeUsage: true });
    expect(buildPrompt(request.messages)).toBe(
      [
        '<system>\nBe brief.\n</system>',
        '<user>\nLook at [image_url omitted: the sub-agent takes text only]\n</user>',
        '<assistant>\n[called read({"p":1})]\n</assistant>',
        '<tool name="c1">\nfile text\n</tool>',
      ].join('\n\n'),
    );
  });

  test.each([
    [null, null],
    [{ messages: 'hi' }, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ role: 'user', content: '   ' }] }, 'messages'],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
    [{ model: '', messages: [{ role: 'user', content: 'x' }] }, 'model'],
    [{ n: 2, messages: [{ role: 'user', content: 'x' }] }, 'n'],
  ])('rejects %j (param %s)', (body, param) => {
    let error: unknown;
    try {
      parseChatRequest(body);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidRequest);
    expect((error as InvalidRequest).param).toBe(param);
  });
});

describe('answer text', () => {
  test('growing text, new segments and explicit deltas all become deltas', () => {
    const answer = new AnswerStream();
    expect([
      answer.push({ text: 'Hel' }),
      answer.push({ text: 'Hello' }),
      answer.push({ progress: 5 }),
      answer.push({ text: ' world' }),
      answer.push({ delta: '!' }),
    ]).toEqual(['Hel', 'lo', '', ' world', '!']);
    expect(answer.finish('Hello world! Bye')).toBe(' Bye');
    expect(answer.text).toBe('Hello world! Bye');
  });

  test('a final text that disagrees with what was streamed adds nothing', () => {
    const answer = new AnswerStream();
    answer.push({ text: 'draft' });
    expect(answer.finish('something else')).toBe('');
  });

  test('final text and usage are read from the usual places; usage is estimated otherwise', () => {
    expect(finalText({ text: 'a' })).toBe('a');
    expect(finalText('b')).toBe('b');
    expect(finalText({ content: 'c' })).toBe('c');
    expect(usageOf({}, { token_usage: { input: 3, output: 4 } }, '', '')).toEqual({
      prompt_tokens: 3,
      completion_tokens: 4,
      total_tokens: 7,
    });
    expect(usageOf({}, { usage: { inputTokens: 1, outputTokens: 2 } }, '', '')).toEqual({
      prompt_tokens: 1,
      completion_tokens: 2,
      total_tokens: 3,
    });
    expect(usageOf({}, {}, 'x'.repeat(40), 'y'.repeat(8))).toEqual({
      prompt_tokens: 10,
      completion_tokens: 2,
      total_tokens: 12,
      estimated: true,
    });
  });
});

describe('the Cursor CLI model list', () => {
  test('reads `id - Name` lines, skipping headings and colours', () => {
    expect(
      parseModelList(
        'Available models\n\n\u001b[36mauto\u001b[39m - Auto\ngpt-5 - GPT-5\nsonnet-4.5 - Claude 4.5 Sonnet (current)\n\nTip: use --model <id>\n',
      ),
    ).toEqual(['auto', 'gpt-5', 'sonnet-4.5']);
  });

  test('reads bare lists and JSON lists; ignores stream-json events', () => {
    expect(parseModelList('Models:\n* gpt-5\n* opus-4.1\n')).toEqual(['gpt-5', 'opus-4.1']);
    expect(parseModelList('[{"id":"a-1"},{"name":"b-2"}]')).toEqual(['a-1', 'b-2']);
    expect(parseModelList('{"models":["x"]}')).toEqual(['x']);
    expect(parseModelList('{"type":"system","subtype":"init"}\n{"type":"result"}\n')).toEqual([]);
  });
});

describe('model modes', () => {
  test('`mode` is bridge, agent or plan; unset it stays unset (bridge when a request offers tools)', () => {
    const config = resolveGatewayConfig({ models: { a: { mode: 'bridge' }, b: { mode: 'plan' }, c: {} } }, {});
    expect(config.models.a).toMatchObject({ mode: 'bridge' });
    expect(config.models.b).toMatchObject({ mode: 'plan' });
    expect(config.models.c!.mode).toBeUndefined();
  });

  test('another mode is a one-line error naming the field and the choices', () => {
    expect(() => resolveGatewayConfig({ models: { a: { mode: 'auto' } } }, {})).toThrow(
      new GatewayConfigError('Expected `models.a.mode` to be one of bridge, agent, plan, got `auto` (string)'),
    );
  });
});
