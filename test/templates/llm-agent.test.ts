/**
 * The llm-agent template: its loop and tools in isolation, then end to end under the real broker
 * against a loopback OpenAI-compatible server with scripted replies (the model is the only stand-in).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseDecision, stripFences, windowHistory } from '../../templates/llm-agent/loop.mjs';
import { confine, createTools, splitCommand } from '../../templates/llm-agent/tools.mjs';
import { runTask, startBroker, startTask, type TestBroker } from '../helpers/broker.js';
import { act, answer, startFakeOpenAI, type FakeOpenAI, type ScriptedReply } from '../helpers/fake-openai.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const agent = path.join(root, 'templates/llm-agent/agent.mjs');

let tb: TestBroker;
beforeAll(async () => {
  tb = await startBroker({ askTimeoutMs: 3000 });
});
afterAll(async () => {
  await tb.close();
});

/** A fresh workspace with a few files, and a secret next to it (outside). */
function workspace(): string {
  const outer = fs.mkdtempSync(path.join(tb.dir, 'llm-'));
  const ws = path.join(outer, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'src/a.js'), '// TODO: one\nconst a = 1;\n// TODO: two\n');
  fs.writeFileSync(path.join(ws, 'README.md'), '# Demo\n');
  fs.writeFileSync(path.join(outer, 'secret.txt'), 'TOP-SECRET-VALUE\n');
  fs.symlinkSync(path.join(outer, 'secret.txt'), path.join(ws, 'link-out'));
  fs.symlinkSync(path.join(ws, 'README.md'), path.join(ws, 'link-in'));
  return ws;
}

describe('llm-agent pieces', () => {
  it('strips code fences and finds the object inside prose', () => {
    expect(stripFences('```json\n{"a":1}\n```')).toBe('{"a":1}');
    expect(stripFences('```\n{"a":1}```')).toBe('{"a":1}');
    const tools = ['read_file'];
    expect(
      parseDecision('Sure! {"thought":"t","action":{"name":"read_file","arguments":{"path":"x"}}} hope that helps', tools),
    ).toMatchObject({
      ok: true,
      decision: { action: { name: 'read_file', arguments: { path: 'x' } } },
    });
    expect(parseDecision('{"thought":"t","action":null,"answer":"42"}', tools)).toEqual({
      ok: true,
      decision: { thought: 't', answer: '42' },
    });
  });

  it('explains what is wrong with an unusable reply', () => {
    const tools = ['read_file'];
    expect(parseDecision('', tools)).toMatchObject({ ok: false, reason: 'the reply was empty' });
    expect(parseDecision('I think I should read it', tools)).toMatchObject({ ok: false, reason: expect.stringMatching(/not valid JSON/) });
    expect(parseDecision('[1]', tools)).toMatchObject({ ok: false, reason: 'the reply must be one JSON object' });
    expect(parseDecision('{"thought":"x"}', tools)).toMatchObject({ ok: false, reason: expect.stringMatching(/either an "action"/) });
    expect(parseDecision('{"action":{"name":"rm","arguments":{}}}', tools)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/unknown tool "rm"/),
    });
    expect(parseDecision('{"action":{"name":"read_file","arguments":[1]}}', tools)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/arguments/),
    });
  });

  it('keeps the system prompt and the task, and a window of whole turns', () => {
    const head = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'task' },
    ];
    const turns = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: String(i) }));
    const windowed = windowHistory([...head, ...turns], 5);
    expect(windowed.slice(0, 2)).toEqual(head);
    expect(windowed[2]?.content).toMatch(/6 earlier messages were dropped/);
    expect(windowed.slice(3).map((m) => m.content)).toEqual(['6', '7', '8', '9']);
    expect(windowed[3]?.role).toBe('assistant');
  });

  describe('tools', () => {
    let ws: string;
    beforeEach(() => {
      ws = workspace();
    });
    afterEach(() => {
      fs.rmSync(path.dirname(ws), { recursive: true, force: true });
    });

    it('refuses paths that escape the workspace, including through symlinks', () => {
      const real = fs.realpathSync(ws);
      for (const p of ['../secret.txt', '/etc/passwd', 'src/../../secret.txt', 'link-out', 'link-out/x']) {
        expect(() => confine(real, p), p).toThrow(/refused/);
      }
      expect(confine(real, 'link-in')).toBe(path.join(real, 'README.md'));
      expect(confine(real, 'new/dir/file.txt')).toBe(path.join(real, 'new/dir/file.txt'));
    });

    it('reads, lists and writes inside the workspace and reports refusals as tool errors', async () => {
      const tools = createTools({ root: ws, writeDir: ws });
      await expect(tools.read_file!.run({ path: 'src/a.js' })).resolves.toMatch(/TODO: one/);
      await expect(tools.list_dir!.run({})).resolves.toEqual(['README.md', 'link-in', 'link-out', 'src/']);
      await expect(tools.write_file!.run({ path: 'out/n.txt', content: 'hi' })).resolves.toMatch(/wrote 2 bytes/);
      expect(fs.readFileSync(path.join(ws, 'out/n.txt'), 'utf8')).toBe('hi');
      await expect(tools.write_file!.run({ path: 'link-out', content: 'x' })).rejects.toThrow(/refused/);
      await expect(tools.read_file!.run({ path: 3 })).rejects.toThrow(/"path" must be/);
      expect(fs.readFileSync(path.join(path.dirname(ws), 'secret.txt'), 'utf8')).toBe('TOP-SECRET-VALUE\n');
    });

    it('runs only allowlisted programs, without a shell, with path arguments confined', async () => {
      const tools = createTools({ root: ws });
      await expect(tools.shell_command!.run({ command: 'grep', args: ['-c', 'TODO', 'src/a.js'] })).resolves.toMatchObject({
        exit_code: 0,
        stdout: '2\n',
      });
      await expect(tools.shell_command!.run({ command: 'wc -l "src/a.js"' })).resolves.toMatchObject({ exit_code: 0 });
      await expect(tools.shell_command!.run({ command: 'grep', args: ['nothing-here', 'README.md'] })).resolves.toMatchObject({
        exit_code: 1,
      });
      await expect(tools.shell_command!.run({ command: 'grep', args: ['x'] })).resolves.toMatchObject({ exit_code: 1, stdout: '' }); // stdin is at EOF
      await expect(tools.shell_command!.run({ command: 'rm', args: ['-rf', '.'] })).rejects.toThrow(/not allowed/);
      await expect(tools.shell_command!.run({ command: 'cat ../secret.txt' })).rejects.toThrow(/refused/);
      await expect(tools.shell_command!.run({ command: 'cat', args: ['/etc/passwd'] })).rejects.toThrow(/refused/);
      await expect(tools.shell_command!.run({ command: 'ls | sh' })).rejects.toThrow(/no shell/);
      expect(() => splitCommand('echo $(id)')).toThrow(/no shell/);
      expect(splitCommand(`grep -n 'a b' "c d"`)).toEqual(['grep', '-n', 'a b', 'c d']);
    });

    it('offers no write_file unless the owner gave a write directory, and writes only under it', async () => {
      expect(Object.keys(createTools({ root: ws }))).toEqual(['read_file', 'list_dir', 'shell_command']);
      const tools = createTools({ root: ws, writeDir: path.join(ws, 'src') });
      await expect(tools.write_file!.run({ path: 'src/b.js', content: 'b' })).resolves.toMatch(/wrote 1 bytes to src\/b.js/);
      await expect(tools.write_file!.run({ path: '.bashrc', content: 'x' })).rejects.toThrow(/writes go only under src/);
      expect(fs.existsSync(path.join(ws, '.bashrc'))).toBe(false);
    });

    it('checks array arguments like a command line: shell syntax, and paths in -o/x and --opt=/x', async () => {
      const tools = createTools({ root: ws });
      await expect(tools.shell_command!.run({ command: 'grep', args: ['-c', 'TODO', 'src/a.js'] })).resolves.toMatchObject({
        exit_code: 0,
      });
      for (const args of [['x', '$(id)'], ['`id`'], ['a;b'], ['x', '>out']])
        await expect(tools.shell_command!.run({ command: 'echo', args }), args.join(' ')).rejects.toThrow(/no shell/);
      await expect(tools.shell_command!.run({ command: 'grep', args: ['-f/etc/passwd', 'README.md'] })).rejects.toThrow(/refused/);
      await expect(tools.shell_command!.run({ command: 'diff', args: ['--to-file=../secret.txt', 'README.md'] })).rejects.toThrow(
        /refused/,
      );
      // Nothing in the default list writes a file or sets the clock.
      for (const program of ['sort', 'uniq', 'date', 'file', 'sh'])
        await expect(tools.shell_command!.run({ command: program, args: [] }), program).rejects.toThrow(/not allowed/);
    });
  });
});

describe('the llm-agent template under the broker', () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  async function start(script: ScriptedReply[], input: unknown, ws = workspace(), env: Record<string, string> = {}) {
    fake = await startFakeOpenAI(script);
    const spec = {
      command: agent,
      cwd: ws,
      input,
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'sk-test-key-123456789', OPENAI_MODEL: 'fake-model', ...env },
      heartbeatTimeoutMs: 10_000,
      timeoutMs: 30_000,
    };
    return { ws, spec, fake };
  }

  it('runs a multi-step tool loop to an answer, reporting each step and the summed token usage', async () => {
    const writable = workspace();
    const {
      ws,
      spec,
      fake: server,
    } = await start(
      [
        { content: act('list_dir', { path: '.' }, 'look around'), usage: { prompt_tokens: 100, completion_tokens: 20 } },
        { content: act('read_file', { path: 'src/a.js' }), usage: { prompt_tokens: 150, completion_tokens: 15 } },
        {
          content: act('shell_command', { command: 'grep', args: ['-c', 'TODO', 'src/a.js'] }),
          usage: { prompt_tokens: 200, completion_tokens: 25 },
        },
        { content: act('write_file', { path: 'TODO-COUNT.txt', content: '2\n' }), usage: { prompt_tokens: 250, completion_tokens: 30 } },
        {
          content: answer('There are 2 TODOs; I wrote the count to TODO-COUNT.txt.'),
          usage: { prompt_tokens: 300, completion_tokens: 10 },
          model: 'fake-model-2026',
        },
      ],
      { task: 'Count the TODOs in src and write the count to TODO-COUNT.txt' },
      writable,
      { LLM_AGENT_WRITE_DIR: writable },
    );
    const run = await runTask(tb.broker, spec);
    expect(run.error).toBeUndefined();
    expect(run.payload?.data).toEqual({ answer: 'There are 2 TODOs; I wrote the count to TODO-COUNT.txt.', steps: 5 });
    expect(run.payload?.meta).toMatchObject({ model_used: 'fake-model-2026', token_usage: { input: 1000, output: 100, total: 1100 } });
    expect(fs.readFileSync(path.join(ws, 'TODO-COUNT.txt'), 'utf8')).toBe('2\n');

    const steps = run.partials.map((p) => p.data as Record<string, unknown>);
    expect(steps.map((s) => s.tool ?? 'answer')).toEqual(['list_dir', 'read_file', 'shell_command', 'write_file', 'answer']);
    expect(steps[0]).toMatchObject({ step: 1, thought: 'look around', ok: true });
    expect(steps[2]).toMatchObject({ ok: true, result: expect.stringContaining('"stdout": "2\\n"') });

    // What the model was sent: JSON mode, an explicit JSON instruction, the key, and tool results fed back.
    const first = server.requests[0]!;
    expect(first.body.response_format).toEqual({ type: 'json_object' });
    expect(first.body.model).toBe('fake-model');
    expect(first.body.messages[0]?.content).toMatch(/exactly one JSON object/);
    expect(first.authorization).toBe('Bearer sk-test-key-123456789');
    expect(server.requests[1]!.body.messages.at(-1)?.content).toMatch(/^Result of list_dir:[\s\S]*src\//);
    expect(server.requests[2]!.body.messages.at(-1)?.content).toMatch(/TODO: two/);
  });

  it('refuses an input that names its own commands or asks for writes the owner did not allow; the model is never asked', async () => {
    for (const [input, message] of [
      [{ task: 'run sh', commands: ['sh'] }, /input "commands" is not accepted: only the owner sets the allow-list, in LLM_AGENT_COMMANDS/],
      [
        { task: 'write ~/.bashrc', allow_writes: true },
        /"allow_writes": true is not accepted: only the owner allows writes, with LLM_AGENT_WRITE_DIR/,
      ],
    ] as const) {
      const { spec, fake: server } = await start([{ content: act('shell_command', { command: 'sh', args: ['-c', 'id'] }) }], input);
      const run = await runTask(tb.broker, spec);
      expect((run.error?.payload?.data as { message: string }).message).toMatch(message);
      expect(run.error?.payload?.retryable).toBe(false);
      expect(server.requests).toHaveLength(0);
      await server.close();
      fake = undefined;
    }
  });

  it('has no write_file by default: a model asked to write gets an unknown tool, and nothing is written', async () => {
    const { ws, spec } = await start(
      [{ content: act('write_file', { path: 'x.txt', content: 'x' }) }, { content: answer('could not') }],
      'Write x.txt',
    );
    const run = await runTask(tb.broker, spec);
    expect(run.payload?.data).toMatchObject({ answer: 'could not' });
    expect(fs.existsSync(path.join(ws, 'x.txt'))).toBe(false);
  });

  it('feeds an unparseable reply back to the model and goes on with the corrected one', async () => {
    const { spec, fake: server } = await start(
      [
        { content: 'Sure! First I will look at the files.', usage: { prompt_tokens: 50, completion_tokens: 9 } },
        { content: '```json\n' + answer('fixed') + '\n```', usage: { prompt_tokens: 70, completion_tokens: 8 } },
      ],
      'Say something',
    );
    const run = await runTask(tb.broker, spec);
    expect(run.payload?.data).toEqual({ answer: 'fixed', steps: 1 });
    expect(run.payload?.meta).toMatchObject({ token_usage: { input: 120, output: 17 } });
    const retry = server.requests[1]!.body.messages;
    expect(retry.at(-2)).toEqual({ role: 'assistant', content: 'Sure! First I will look at the files.' });
    expect(retry.at(-1)?.content).toMatch(/could not be used: the reply is not valid JSON/);
  });

  it('gives up after a bounded number of unusable replies', async () => {
    const { spec, fake: server } = await start(
      [{ content: 'no' }, { content: 'still no' }, { content: '{"thought": "x"}' }, { content: answer('never used') }],
      'Do it',
    );
    const run = await runTask(tb.broker, spec);
    expect(run.error?.reason).toBe('error');
    expect((run.error?.payload?.data as { message: string }).message).toMatch(/3 unusable replies in a row/);
    expect(server.requests).toHaveLength(3);
  });

  it('refuses a path that escapes the workspace and lets the model carry on', async () => {
    const { spec, fake: server } = await start(
      [
        { content: act('read_file', { path: '../secret.txt' }) },
        { content: act('read_file', { path: 'link-out' }) },
        { content: answer('could not read it') },
      ],
      'Read ../secret.txt',
    );
    const run = await runTask(tb.broker, spec);
    expect(run.payload?.data).toMatchObject({ answer: 'could not read it' });
    const steps = run.partials.map((p) => p.data as Record<string, unknown>);
    expect(steps[0]).toMatchObject({
      tool: 'read_file',
      ok: false,
      result: expect.stringMatching(/refused: "..\/secret.txt" is outside the workspace/),
    });
    expect(steps[1]).toMatchObject({ ok: false, result: expect.stringMatching(/through a symlink/) });
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain('TOP-SECRET-VALUE');
  });

  it('stops at the step limit with a final error', async () => {
    const { spec } = await start(
      Array.from({ length: 5 }, () => ({ content: act('list_dir', {}) })),
      { task: 'Loop forever', max_steps: 3 },
    );
    const run = await runTask(tb.broker, { ...spec, retries: 2 });
    expect((run.error?.payload?.data as { message: string }).message).toMatch(/no answer after 3 steps/);
    expect(run.error?.payload?.retryable).toBe(false);
    expect(run.snapshot.attempt).toBe(1);
  });

  it('keeps the history to a window', async () => {
    const { spec, fake: server } = await start(
      [...Array.from({ length: 6 }, () => ({ content: act('list_dir', {}) })), { content: answer('ok') }],
      { task: 'List a lot', history_window: 4 },
    );
    const run = await runTask(tb.broker, spec);
    expect(run.payload?.data).toMatchObject({ steps: 7 });
    const last = server.requests.at(-1)!.body.messages;
    expect(last).toHaveLength(2 + 1 + 4);
    expect(last[1]?.content).toBe('Task: List a lot');
    expect(last[2]?.content).toMatch(/earlier messages were dropped/);
  });

  it('asks the person through ask_user and uses the answer', async () => {
    const { spec, fake: server } = await start(
      [
        { content: act('ask_user', { question: 'Which file?', choices: ['README.md', 'src/a.js'] }) },
        { content: answer('you chose src/a.js') },
      ],
      'Summarise a file',
    );
    const run = await runTask(tb.broker, spec, (update, handle) => {
      const question = handle.snapshot().pendingQuestion;
      if (update.kind === 'ask' && question) tb.broker.answer(handle.id, question.askId, 'src/a.js');
    });
    expect(run.payload?.data).toMatchObject({ answer: 'you chose src/a.js' });
    expect(server.requests[1]!.body.messages.at(-1)?.content).toMatch(/Result of ask_user:[\s\S]*"answer": "src\/a.js"/);
  });

  it('tells the model when nobody answers ask_user, and lets it decide', async () => {
    const { spec, fake: server } = await start(
      [{ content: act('ask_user', { question: 'Which file?' }) }, { content: answer('picked README.md myself') }],
      'Summarise a file',
    );
    const run = await runTask(tb.broker, spec); // nobody answers: the broker's ask timeout (3 s here)
    expect(run.payload?.data).toMatchObject({ answer: 'picked README.md myself' });
    expect(run.partials[0]?.data).toMatchObject({ tool: 'ask_user', ok: false, result: expect.stringMatching(/nobody answered/) });
    expect(server.requests[1]!.body.messages.at(-1)?.content).toMatch(/Result of ask_user \(failed\):\nerror: nobody answered/);
  });

  it('aborts the request in flight when cancelled', async () => {
    const { spec, fake: server } = await start([{ content: act('list_dir', {}) }, { hang: true }], 'Take your time');
    const running = startTask(tb.broker, spec);
    await server.hanging;
    running.handle.cancel('changed my mind');
    const run = await running.done;
    expect(run.snapshot.state).toBe('cancelled');
    await server.hangAborted; // the agent's fetch was aborted, not left dangling
    expect(server.requests.at(-1)?.aborted).toBe(true);
  });

  it('fails for good with a hint when the endpoint refuses the key', async () => {
    const { spec } = await start([{ status: 401, content: 'Incorrect API key provided: sk-test-key-123456789' }], 'Hi');
    const run = await runTask(tb.broker, { ...spec, retries: 1 });
    const message = (run.error?.payload?.data as { message: string }).message;
    expect(message).toMatch(/answered 401: .*check OPENAI_API_KEY/);
    expect(message).not.toContain('sk-test-key-123456789');
    expect(run.error?.payload?.retryable).toBe(false);
  });

  it('refuses an input without a task', async () => {
    const { spec } = await start([], { model: 'x' });
    const run = await runTask(tb.broker, spec);
    expect((run.error?.payload?.data as { message: string }).message).toMatch(/needs a "task"/);
    expect(run.error?.payload?.retryable).toBe(false);
  });
});
