/** The tools a request offers and the caller's answers, declared once (src/model/tools.ts): checked in one line. */
import { describe, expect, test } from 'vitest';
import * as z from 'zod/mini';
import { checkTaskRequest, taskRequestJsonSchema } from '../../src/model/task-request.js';
import { requestOfSpec, specOfRequest } from '../../src/model/spec-wire.js';
import { firstProblem } from '../../src/model/shapes.js';
import { MAX_TOOLS, TOOL_ANSWER, waitingForTools } from '../../src/model/tools.js';
import { MAX_INPUT_BYTES } from '../../src/model/limits.js';

const READ = { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };

const problem = (value: unknown): string => {
  try {
    checkTaskRequest(value);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
};

describe('the tools of a task request', () => {
  test('tools travel whole through the request and back into a spec', () => {
    const request = checkTaskRequest({ command: 'x', tools: [READ, { name: 'Write', input_schema: {} }] });
    expect(request.tools).toEqual([READ, { name: 'Write', input_schema: {} }]);
    expect(specOfRequest(request).tools).toEqual(request.tools);
    expect(requestOfSpec({ command: 'x', tools: [READ] }).tools).toEqual([READ]);
    const schema = taskRequestJsonSchema() as { properties: Record<string, { type?: string; description?: string }> };
    expect(schema.properties.tools?.type).toBe('array');
    expect(schema.properties.tools?.description).toContain('tool_call');
  });

  test.each([
    [{ tools: 'Read' }, 'Expected `tools` to be an array of tools, got `Read` (string)'],
    [{ tools: [5] }, 'Expected `tools[0]` to be a tool {name, description?, input_schema}, got `5` (number)'],
    [{ tools: [{ input_schema: {} }] }, 'Expected `tools[0].name` to be a string, got undefined'],
    [{ tools: [{ name: ' ', input_schema: {} }] }, 'Expected `tools[0].name` to be a non-empty string'],
    [{ tools: [{ name: 'Read' }] }, 'Expected `tools[0].input_schema` to be a JSON Schema object, got undefined'],
    [{ tools: [{ name: 'Read', input_schema: [] }] }, 'Expected `tools[0].input_schema` to be a JSON Schema object, got an array'],
    [{ tools: [{ ...READ, parameters: {} }] }, 'Unexpected `tools[0].parameters` (a tool has name, description and input_schema)'],
    [{ tools: [READ, READ] }, 'Expected each of `tools` once, got `Read` (string) twice'],
    [
      { tools: Array.from({ length: MAX_TOOLS + 1 }, (_, i) => ({ name: `t${i}`, input_schema: {} })) },
      `Expected at most ${MAX_TOOLS} \`tools\`, got ${MAX_TOOLS + 1}`,
    ],
  ])('%j is refused in one line', (fields, message) => {
    expect(problem({ command: 'x', ...fields })).toBe(message);
  });
});

describe("the caller's answer to a tool call", () => {
  const check = (value: unknown) => {
    const parsed = z.safeParse(TOOL_ANSWER, value);
    return parsed.success ? parsed.data : firstProblem(parsed.error, 'answer');
  };

  test('content is any JSON value, null included; an error is a line of text', () => {
    expect(check({ content: 'ok' })).toEqual({ content: 'ok' });
    expect(check({ content: null })).toEqual({ content: null });
    expect(check({ content: [{ type: 'text', text: 'a' }] })).toEqual({ content: [{ type: 'text', text: 'a' }] });
    expect(check({ error: 'ENOENT' })).toEqual({ error: 'ENOENT' });
  });

  test('anything else is refused in one line, a result too big for one protocol line too', () => {
    expect(check({})).toBe('Expected `answer` to be {content} or {error}, got an object with no keys');
    expect(check({ content: undefined })).toBe('Expected `answer.content` to be a JSON value');
    expect(check({ error: 5 })).toBe('Expected `answer.error` to be a non-empty string, got `5` (number)');
    expect(check({ content: 'x'.repeat(MAX_INPUT_BYTES) })).toMatch(/^the tool result is \d+ bytes, over the 64 MiB limit/);
  });

  test('a task waiting on tools says which, each name once', () => {
    expect(waitingForTools(undefined)).toBeUndefined();
    expect(waitingForTools([])).toBeUndefined();
    expect(waitingForTools([{ name: 'Read' }, { name: 'Write' }, { name: 'Read' }])).toBe('waiting for Read, Write');
  });
});
