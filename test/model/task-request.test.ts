import { describe, expect, test } from 'vitest';
import { checkTaskRequest, taskRequestJsonSchema, TASK_REQUEST_KEYS } from '../../src/model/task-request.js';
import { requestOfSpec, specOfRequest } from '../../src/model/spec-wire.js';
import type { TaskSpec } from '../../src/model/task.js';

const problem = (value: unknown): string => {
  try {
    checkTaskRequest(value);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
};

describe('the task request, declared once', () => {
  test.each([
    [5, 'Expected the request to be an object, got `5` (number)'],
    [{}, 'Expected `command` to be a string, got undefined'],
    [{ command: '  ' }, 'Expected `command` to be a non-empty string'],
    [{ command: 'x', args: ['a', 5] }, 'Expected `args[1]` to be a string, got `5` (number)'],
    [{ command: 'x', args: Array(300).fill('a') }, 'Expected at most 256 `args`, got 300'],
    [{ command: 'x', timeoutMs: 'x' }, 'Expected `timeoutMs` to be a non-negative finite number, got `x` (string)'],
    [{ command: 'x', heartbeatTimeoutMs: -1 }, 'Expected `heartbeatTimeoutMs` to be a non-negative finite number, got `-1` (number)'],
    [{ command: 'x', env: { 'BAD NAME': 'v' } }, 'Expected the names in `env` to be like FOO_BAR, got `BAD NAME` (string)'],
    [{ command: 'x', tags: { source: 5 } }, 'Expected `tags.source` to be a string, got `5` (number)'],
    [{ command: 'x', origin: 'foo' }, 'Expected `origin` to be one of cli, mcp, panel, gateway, control, schedule, got `foo` (string)'],
    [{ command: 'x', worktree: 5 }, 'Expected `worktree` to be true or an object, got `5` (number)'],
    [{ command: 'x', worktree: { base: 5 } }, 'Expected `worktree.base` to be a string, got `5` (number)'],
    [{ command: 'x', worktree: { bse: 'main' } }, 'Unexpected `worktree.bse`'],
    [{ command: 'x', retries: 1.5 }, 'Expected `retries` to be an integer from 0 to 100, got 1.5'],
    [{ command: 'x'.repeat(5000) }, 'Expected `command` to be at most 4096 characters, got 5000'],
  ])('%j is refused in one line', (value, message) => {
    expect(problem(value)).toBe(message);
  });

  test('a clean copy: unknown fields dropped, an empty cwd or label is not given', () => {
    expect(checkTaskRequest({ command: 'x', cwd: '', label: '', junk: 1, worktree: true, retries: 2, env: { A: '' } })).toEqual({
      command: 'x',
      env: { A: '' },
      worktree: true,
      retries: 2,
    });
    expect(Object.keys(checkTaskRequest({ command: 'x', cwd: '' }))).toEqual(['command']);
  });

  test('its JSON Schema says every field, for MCP tools', () => {
    const schema = taskRequestJsonSchema() as { type: string; required: string[]; properties: Record<string, { type?: string }> };
    expect(schema.type).toBe('object');
    expect(schema.required).toEqual(['command']);
    expect(Object.keys(schema.properties)).toEqual([...TASK_REQUEST_KEYS]);
    expect(schema.properties.timeoutMs).toMatchObject({ type: 'number', minimum: 0 });
    expect(schema.properties.retries).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
  });

  test('a spec and a request copy into each other by the schema keys; in-process fields stay behind', () => {
    const spec: TaskSpec = {
      command: 'agent',
      args: ['a'],
      cwd: '/w',
      label: 'L',
      input: { q: 1 },
      timeoutMs: 5,
      heartbeatTimeoutMs: 6,
      askTimeoutMs: 7,
      retries: 2,
      env: { A: '1' },
      baseEnv: { HOME: '/h', 'BASH_FUNC_f%%': '() {}' },
      tags: { t: 'v' },
      origin: 'cli',
      taskIdArg: false,
      worktree: { base: 'main' },
      parent: 'p1',
      signal: new AbortController().signal,
      estimatedTokens: 9,
    };
    const request = requestOfSpec(spec);
    expect(request).toEqual({
      command: 'agent',
      args: ['a'],
      cwd: '/w',
      label: 'L',
      input: { q: 1 },
      timeoutMs: 5,
      heartbeatTimeoutMs: 6,
      askTimeoutMs: 7,
      env: { A: '1' },
      callerEnv: { HOME: '/h' },
      tags: { t: 'v' },
      origin: 'cli',
      taskIdArg: false,
      worktree: { base: 'main' },
      parent: 'p1',
      retries: 2,
    });
    expect(checkTaskRequest(request)).toEqual(request);
    const { signal: _signal, estimatedTokens: _tokens, ...wire } = spec;
    expect(specOfRequest(request)).toEqual({ ...wire, baseEnv: { HOME: '/h' } });
  });

  test('what a request cannot carry is refused, not dropped', () => {
    expect(() => requestOfSpec({ command: 'x', retries: { max: 2 } })).toThrow(/`retries` as a number/);
    expect(() => requestOfSpec({ command: 'x', env: { A: undefined } })).toThrow(/cannot remove an environment variable \(A\)/);
  });
});
