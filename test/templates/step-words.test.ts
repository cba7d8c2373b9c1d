/**
 * The coding templates' current step in words (templates/_shared/stream-json.mjs `describeStep`):
 * what a task row shows while the agent works — from tool calls as Claude Code's recordings and the
 * Cursor CLI's and Codex's tool shapes carry them.
 */
import { describe, expect, test } from 'vitest';
import { describeStep } from '../../templates/_shared/stream-json.mjs';
import { createClaudeTranslator } from '../../templates/claude-code/translate.mjs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/core.js';

describe('the current step in words', () => {
  test('Claude Code tool calls (recorded 2.1.332 streams): writing a file, running a command', () => {
    const recorded = (name: string) => readFileSync(path.join(ROOT, 'test/fixtures/standins/recordings/claude', name), 'utf8');
    const steps = ['cc-2.1.332-write-acceptEdits.ndjson', 'cc-2.1.332-tool-default.ndjson'].flatMap((name) => {
      const translator = createClaudeTranslator();
      return recorded(name)
        .split('\n')
        .filter(Boolean)
        .flatMap((line) => translator.push(JSON.parse(line)) as Array<{ kind: string; phase?: string; name: string; args: unknown }>)
        .filter((event) => event.kind === 'tool' && event.phase === 'started')
        .map((event) => describeStep(event.name, event.args, '/home/user/project'));
    });
    expect(steps).toEqual(['writing written.txt', 'running echo tool-ran']);
  });

  test.each([
    ['Edit', { file_path: '/repo/src/x.ts', old_string: 'a', new_string: 'b' }, 'editing src/x.ts'],
    ['Read', '{"file_path":"/repo/README.md"}', 'reading README.md'],
    ['Bash', { command: 'npm test' }, 'running npm test'],
    ['Grep', { pattern: 'TODO' }, 'searching for TODO'],
    ['TodoWrite', { todos: [] }, 'updating the plan'],
    ['edit', { path: 'src/y.ts' }, 'editing src/y.ts'],
    ['shell', { command: 'git status' }, 'running git status'],
    ['command_execution', { command: "bash -lc 'npm test'" }, "running 'npm test'"],
    ['Edit', '{"file_path":"/repo/src/very/long/pa… (900 chars)', 'editing src/very/long/pa… (900 chars)'],
  ])('%s %j → %s', (name, args, words) => {
    expect(describeStep(name, args, '/repo')).toBe(words);
  });

  test('a long argument sent before the path does not cut the path off the step (the translators put target fields first)', () => {
    const translator = createClaudeTranslator();
    const [started] = translator.push({
      type: 'assistant',
      message: {
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'Write', input: { content: 'x'.repeat(5000), file_path: '/repo/notes.md' } }],
      },
    }) as Array<{ name: string; args: string }>;
    expect(started!.args.length).toBeLessThan(260);
    expect(describeStep(started!.name, started!.args, '/repo')).toBe('writing notes.md');
  });

  test('a tool it does not know says nothing (the row shows the tool name)', () => {
    expect(describeStep('mcp__linear__create_issue', { title: 'x' }, '/repo')).toBeUndefined();
  });
});
