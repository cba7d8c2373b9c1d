/**
 * start_task's and run_task's arguments are derived from the one task request (src/model/task-request.ts):
 * each argument that is a request field publishes that field's JSON Schema and is checked by its schema,
 * the one-line problem naming the MCP argument; MCP's side (snake_case, JSON text, seconds, an object
 * `input`) is a mapping, not a second declaration. create_schedule's arguments, the same way from the
 * schedule's declaration (src/mcp/derived-args.ts).
 */
import * as z from 'zod';
import { describe, expect, test } from 'vitest';
import { taskRequestJsonSchema, MAX_ARGS } from '../../src/model/task-request.js';
import { SCHEDULE_TOOLS } from '../../src/mcp/schedule-tools.js';
import { parseStartArgs, START_SHAPE } from '../../src/mcp/start-task.js';

const published = z.toJSONSchema(z.object(START_SHAPE), { io: 'input', unrepresentable: 'any' }) as {
  properties: Record<string, Record<string, unknown>>;
};
const request = taskRequestJsonSchema() as { properties: Record<string, Record<string, unknown>> };
const withoutDescription = ({ description: _, ...schema }: Record<string, unknown>) => schema;

/** The message a call with these arguments is refused with (what the SDK puts before ` at <argument>`). */
function refusal(args: Record<string, unknown>): string {
  try {
    parseStartArgs(args);
  } catch (error) {
    return (error as z.ZodError).issues.map((issue) => issue.message).join('\n');
  }
  throw new Error('accepted');
}

describe('start arguments from the task request', () => {
  test.each([
    ['command', 'command'],
    ['args', 'args'],
    ['label', 'label'],
    ['cwd', 'cwd'],
    ['max_tokens', 'maxTokens'],
    ['max_cost_usd', 'maxCostUsd'],
    ['max_turns', 'maxTurns'],
  ])('%s publishes the JSON Schema of the request’s %s, with MCP’s description', (name, field) => {
    expect(withoutDescription(published.properties[name]!)).toEqual(withoutDescription(request.properties[field]!));
    expect(published.properties[name]!.description).toEqual(expect.any(String));
  });

  test('input is narrowed to an object and timeout_seconds is in seconds; every argument has a type', () => {
    expect(published.properties.input).toMatchObject({ type: 'object' });
    expect(published.properties.timeout_seconds).toMatchObject({ type: 'number', exclusiveMinimum: 0 });
    for (const [name, schema] of Object.entries(published.properties)) expect(schema.type, name).toEqual(expect.any(String));
  });

  test('the request’s checks hold, in one line naming the MCP argument', () => {
    expect(refusal({ max_tokens: 0 })).toBe('Expected `max_tokens` to be a positive integer, got `0` (number)');
    expect(refusal({ max_turns: 1.5 })).toBe('Expected `max_turns` to be a positive integer, got `1.5` (number)');
    expect(refusal({ args: Array.from({ length: MAX_ARGS + 1 }, () => 'x') })).toBe(`Expected at most ${MAX_ARGS} \`args\`, got 257`);
    expect(refusal({ args: ['ok', 5] })).toMatch(/^Expected `args\[1\]` to be a string/);
    expect(refusal({ command: '' })).toMatch(/^Expected `command` to be a non-empty string/);
    expect(refusal({ input: 'path=.' })).toBe('must be a JSON object, e.g. {"prompt": "…"}');
    expect(refusal({ timeout_seconds: 0 })).toBe('must be a positive number of seconds');
  });

  test('JSON text is parsed; seconds become the request’s milliseconds; an empty label is not given', () => {
    expect(parseStartArgs({ command: 'a', args: '["-v"]', input: '{"path":"."}', timeout_seconds: 1.5, label: '' })).toEqual({
      command: 'a',
      args: ['-v'],
      input: { path: '.' },
      timeout_seconds: 1500,
    });
  });
});

describe('create_schedule arguments from the schedule’s one declaration', () => {
  const shape = SCHEDULE_TOOLS.find((tool) => tool.name === 'create_schedule')!.inputSchema;
  const schema = z.toJSONSchema(z.object(shape), { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, Record<string, unknown>>;
  };
  const problem = (args: Record<string, unknown>) => z.object(shape).safeParse({ name: 'x', ...args }).error?.issues[0]?.message;

  test('the policies and budgets publish the schedule fields’ JSON Schema', () => {
    expect(schema.properties.overlap).toMatchObject({ enum: ['skip', 'buffer-one', 'cancel-other', 'allow'] });
    expect(schema.properties.catch_up).toMatchObject({ enum: ['latest', 'none', 'all'] });
    expect(schema.properties.max_tokens).toMatchObject({ type: 'integer', minimum: 1 });
    expect(schema.properties.paused).toMatchObject({ type: 'boolean' });
  });

  test('a wrong value is the schedule’s one line, naming the MCP argument', () => {
    expect(problem({ max_tokens: 0 })).toBe('Expected `max_tokens` to be a positive integer, got `0` (number)');
    expect(problem({ catch_up: 'some' })).toBe('Expected `catch_up` to be one of latest, none, all, got `some` (string)');
    expect(problem({ cwd: ' ' })).toBe('Expected `cwd` to be a non-empty string');
    expect(problem({ overlap: 'allow', paused: true })).toBeUndefined();
  });
});
