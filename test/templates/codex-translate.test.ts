/**
 * The codex template's pure half against the stream of the real Codex 0.171.0 (`codex exec --json`,
 * recorded by test/clients/codex-worktree.clients.ts into test/fixtures/recordings/): every kind of
 * line it prints is mapped, and the mapping is what the task row and the result show.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture, tempDir } from '../helpers/core.js';
import { describeStep } from '../../templates/_shared/stream-json.mjs';
import * as codex from '../../templates/codex/translate.mjs';
import { sessionFile, threadUsage } from '../../templates/codex/sessions.mjs';

type Neutral = { kind: string; [key: string]: unknown };
const PROJECT = '/home/user/project';

const lines = (name: string) =>
  fs
    .readFileSync(fixture(`recordings/${name}`), 'utf8')
    .split('\n')
    .map((line) => codex.parseEventLine(line))
    .filter((event): event is Record<string, unknown> => event !== null);

function translate(events: Array<Record<string, unknown>>, options?: { cwd?: string; baseline?: Record<string, number> }) {
  const translator = codex.createCodexTranslator(options);
  return events.flatMap((event) => translator.push(event) as Neutral[]);
}

describe('codex exec --json (real 0.171.0) → neutral events', () => {
  const events = lines('codex-exec-json.jsonl');
  const out = translate(events, { cwd: PROJECT });

  it('maps every line but turn.started to something', () => {
    const translator = codex.createCodexTranslator({ cwd: PROJECT });
    for (const event of events) {
      const mapped = translator.push(event) as Neutral[];
      if (event.type === 'turn.started') expect(mapped).toEqual([]);
      else expect(mapped.length, JSON.stringify(event)).toBeGreaterThan(0);
    }
  });

  it('thread.started → the session id; the metadata warning item → a status', () => {
    expect(out[0]).toEqual({ kind: 'init', session_id: '01a2333a-2fbb-7c73-8653-630cd7617b6d' });
    expect(out[1]).toMatchObject({ kind: 'status', message: expect.stringMatching(/^Model metadata for `fake-model` not found/) });
  });

  it('commands: started and completed, the script without its shell, a failing one not ok', () => {
    const tools = out.filter((e) => e.kind === 'tool');
    expect(tools.map((t) => [t.name, t.phase, t.ok])).toEqual([
      ['command_execution', 'started', undefined],
      ['command_execution', 'completed', true],
      ['command_execution', 'started', undefined],
      ['command_execution', 'completed', false],
      ['file_change', 'started', undefined],
      ['file_change', 'completed', true],
    ]);
    expect(tools[1]).toMatchObject({ call_id: 'item_1', args: '{"command":"cat README.md"}', result: '# demo\n' });
    expect(tools[3]!.result).toMatch(/No such file or directory/);
  });

  it('the steps in words: running the script, editing the file relative to the worktree', () => {
    const steps = out.filter((e) => e.kind === 'tool' && e.phase === 'started').map((t) => describeStep(t.name, t.args, PROJECT));
    expect(steps).toEqual(['running cat README.md', 'running ls no-such-file', 'editing README.md']);
    const change = out.find((e) => e.kind === 'tool' && e.name === 'file_change');
    expect(JSON.parse(change!.args as string)).toEqual({ path: 'README.md', changes: ['update README.md', 'add notes.txt'] });
  });

  it('the answer, and turn.completed → a result with the usage in the protocol’s names', () => {
    expect(out.filter((e) => e.kind === 'text')).toEqual([{ kind: 'text', text: 'I edited README.md and added notes.txt.', delta: false }]);
    const result = out.at(-1)!;
    expect(result).toMatchObject({ kind: 'result', ok: true, text: 'I edited README.md and added notes.txt.' });
    expect(result.meta).toEqual({
      session_id: '01a2333a-2fbb-7c73-8653-630cd7617b6d',
      usage: { input_tokens: 420, cached_input_tokens: 20, cache_write_input_tokens: 0, output_tokens: 38, reasoning_output_tokens: 0 },
      token_usage: { input: 420, output: 38, total: 458, cache_read: 20, cache_creation: 0, reasoning: 0 },
    });
  });
});

describe('reasoning (real 0.171.0, recordings/bridge/codex-0.171.0-reasoning.ndjson)', () => {
  it("a reasoning item's summary is thinking (then its status), never the answer", () => {
    const out = translate(lines('bridge/codex-0.171.0-reasoning.ndjson'), { cwd: PROJECT });
    const summary = '**Greeting**\n\nThe user wants a greeting. I will say hi.';
    expect(out.filter((e) => e.kind === 'thinking')).toEqual([{ kind: 'thinking', text: summary }]);
    expect(out.findIndex((e) => e.kind === 'thinking') + 1).toBe(out.findIndex((e) => e.kind === 'status' && e.message === summary));
    expect(out.find((e) => e.kind === 'result')).toMatchObject({ ok: true, text: 'Hi there.' });
  });

  it('a second reasoning item continues the thinking after a blank line', () => {
    const translator = codex.createCodexTranslator();
    const item = (text: string) => ({ type: 'item.completed', item: { id: 'r', type: 'reasoning', text } });
    expect(translator.push(item('one'))[0]).toEqual({ kind: 'thinking', text: 'one' });
    expect(translator.push(item('two'))[0]).toEqual({ kind: 'thinking', text: '\n\ntwo' });
  });
});

describe('a resumed thread (real 0.171.0)', () => {
  it('keeps the session id; its usage, the thread’s total, less the earlier runs’ is this run’s', () => {
    const before = {
      input_tokens: 420,
      cached_input_tokens: 20,
      cache_write_input_tokens: 0,
      output_tokens: 38,
      reasoning_output_tokens: 0,
    };
    const out = translate(lines('codex-exec-json-resume.jsonl'), { baseline: before });
    expect(out[0]).toEqual({ kind: 'init', session_id: '01a2333a-2fbb-7c73-8653-630cd7617b6d' });
    const result = out.at(-1)!;
    expect(result).toMatchObject({ kind: 'result', ok: true, text: 'Resumed: the edit is in place.' });
    expect(result.meta).toMatchObject({
      usage: { input_tokens: 100, output_tokens: 10, cached_input_tokens: 0 },
      thread_usage: { input_tokens: 520, output_tokens: 48 },
      token_usage: { input: 100, output: 10, total: 110 },
    });
    // Without a baseline (no session file) the total is reported as it is.
    expect(translate(lines('codex-exec-json-resume.jsonl')).at(-1)!.meta).toMatchObject({ token_usage: { input: 520, output: 48 } });
  });
});

describe('errors (real 0.171.0)', () => {
  it('a refused key stops the run at its first reconnect, as a login failure', () => {
    const out = translate(lines('codex-exec-json-401.jsonl'));
    const fatal = out.find((e) => e.kind === 'fatal');
    expect(fatal).toEqual({
      kind: 'fatal',
      auth: true,
      message: 'unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:PORT/v1/responses',
    });
    expect(out.findIndex((e) => e.kind === 'fatal')).toBe(out.findIndex((e) => e.kind !== 'init' && e.kind !== 'status'));
  });

  it('another error is a reconnect: a status, and the turn goes on to its answer', () => {
    const out = translate(lines('codex-exec-json-reconnect.jsonl'));
    expect(out.filter((e) => e.kind === 'status').map((e) => e.message)).toContain(
      'Reconnecting... 1/5 (stream disconnected before completion: stream closed before response.completed)',
    );
    expect(out.filter((e) => e.kind === 'result')).toEqual([expect.objectContaining({ ok: true, text: 'Answered after a reconnect.' })]);
  });

  it('turn.failed ends the run, not ok, with its message', () => {
    // The 401 run's lines with another cause: the reconnects are statuses, turn.failed the end.
    const events = lines('codex-exec-json-401.jsonl').map(
      (event) =>
        JSON.parse(
          JSON.stringify(event).replaceAll(
            'unexpected status 401 Unauthorized: Incorrect API key provided',
            'stream disconnected before completion',
          ),
        ) as Record<string, unknown>,
    );
    const out = translate(events);
    expect(out.some((e) => e.kind === 'fatal')).toBe(false);
    expect(out.filter((e) => e.kind === 'status')).toHaveLength(7);
    expect(out.filter((e) => e.kind === 'result')).toEqual([
      expect.objectContaining({
        ok: false,
        subtype: 'turn.failed',
        error: 'stream disconnected before completion, url: http://127.0.0.1:PORT/v1/responses',
      }),
    ]);
    expect(codex.looksLikeAuthFailure('unexpected status 401 Unauthorized: Incorrect API key provided')).toBe(true);
  });
});

describe('pieces', () => {
  it('commandScript takes the script out of the shell’s command line Codex reports', () => {
    expect(codex.commandScript("/bin/bash -lc 'npm test'")).toBe('npm test');
    expect(codex.commandScript('bash -lc ls')).toBe('ls');
    expect(codex.commandScript('/bin/bash -lc "printf \'a\\\\n\' > \\"x y\\" \\$HOME"')).toBe('printf \'a\\n\' > "x y" $HOME');
    expect(codex.commandScript('git status')).toBe('git status');
    expect(codex.commandScript("/bin/bash -lc 'it'\"'\"'s'")).toBe("/bin/bash -lc 'it'\"'\"'s'");
  });

  it('the command line: resume after the exec options, the prompt after --', () => {
    expect(codex.buildCodexArgs({ prompt: 'Go on', allowWrites: true, resume: 'abc' })).toEqual([
      'exec',
      '--json',
      '--sandbox',
      'workspace-write',
      'resume',
      'abc',
      '--',
      'Go on',
    ]);
    expect(codex.buildCodexArgs({ prompt: 'Look' })).toEqual(['exec', '--json', '--sandbox', 'read-only', '--', 'Look']);
  });
});

describe("the thread's usage from Codex's session file", () => {
  // The shape of the real 0.171.0 file: one JSON event a line, token_count events with the running total.
  const tokenCount = (input: number, output: number) =>
    JSON.stringify({
      timestamp: '2026-12-01T20:06:58.370Z',
      type: 'event_msg',
      payload: {
        type: 'token_count',
        info: {
          total_token_usage: {
            input_tokens: input,
            cached_input_tokens: 0,
            output_tokens: output,
            reasoning_output_tokens: 0,
            total_tokens: input + output,
          },
          last_token_usage: { input_tokens: 100, cached_input_tokens: 0, output_tokens: 7, reasoning_output_tokens: 0, total_tokens: 107 },
        },
      },
    });

  it('is the last token_count total of the thread’s rollout file, newest day first', () => {
    const home = tempDir('bc-codex-home-');
    const id = '01a23337-3f41-7ce1-87ac-9d2d9b1f1257';
    const day = path.join(home, 'sessions', '2026', '12', '01');
    fs.mkdirSync(day, { recursive: true });
    const file = path.join(day, `rollout-2026-12-01T20-06-28-${id}.jsonl`);
    fs.writeFileSync(
      file,
      [JSON.stringify({ type: 'session_meta', payload: { id } }), tokenCount(100, 7), tokenCount(300, 14), '{"torn'].join('\n'),
    );
    fs.writeFileSync(path.join(day, 'rollout-2026-12-01T20-00-00-01a23337-0000-7000-8000-000000000000.jsonl'), tokenCount(9, 9));
    expect(sessionFile(id, home)).toBe(file);
    expect(threadUsage(id, home)).toMatchObject({ input_tokens: 300, output_tokens: 14 });
  });

  it('is undefined for an unknown thread, a missing home, or no id', () => {
    const home = tempDir('bc-codex-home-');
    expect(threadUsage('01a23337-0000-7000-8000-ffffffffffff', home)).toBeUndefined();
    expect(threadUsage('x', path.join(os.tmpdir(), 'no-such-codex-home'))).toBeUndefined();
    expect(threadUsage(undefined as unknown as string, home)).toBeUndefined();
  });
});
