import { describe, expect, test } from 'vitest';
import { checkArgs, ROUTES } from '../../src/bridge/calls.js';

const problem = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('the route arguments, as schemas in the one route table', () => {
  test('every route names its arguments from its schemas', () => {
    expect(ROUTES.answer.args).toEqual(['id', 'askId', 'answer', 'via']);
    expect(ROUTES.submit.args).toEqual(['body']);
    expect(ROUTES.info.args).toEqual([]);
  });

  test.each([
    ['cancel', ['t1', 5], 'Expected `reason` to be a string, got `5` (number)'],
    ['answer', ['t1', undefined, 'yes'], 'Expected `askId` to be a string, got undefined'],
    ['attachment', ['t1', ''], 'Expected `name` to be a non-empty string'],
    ['applyChanges', [[]], 'Expected `ids` to be a non-empty array of task ids, got an array'],
    ['applyChanges', ['t1'], 'Expected `ids` to be a non-empty array of task ids, got `t1` (string)'],
    ['applyChanges', [['t1', 5]], 'Expected `ids[1]` to be a string, got `5` (number)'],
    ['setPaused', ['yes'], 'Expected `paused` to be a boolean, got `yes` (string)'],
    ['listTaskPage', [5], 'Expected the query to be an object, got `5` (number)'],
    ['listTaskPage', [{ limit: 0 }], 'Expected `limit` to be an integer from 1 to 1000, got `0` (number)'],
    [
      'listTaskPage',
      [{ state: 'done' }],
      'Expected `state` to be one of queued, running, retrying, succeeded, failed, cancelled, interrupted, got `done` (string)',
    ],
    [
      'listTaskPage',
      [{ state: ['failed', 'done'] }],
      'Expected `state[1]` to be one of queued, running, retrying, succeeded, failed, cancelled, interrupted, got `done` (string)',
    ],
    ['insights', [{ since: 'yesterday' }], 'Expected `since` to be an ISO 8601 time, got `yesterday` (string)'],
    ['insights', [{ by: 'day' }], 'Expected `by` to be "agent" or "model", got `day` (string)'],
    ['insights', [{ pick: 5 }], 'Expected `pick` to be an object, got `5` (number)'],
    ['insights', [{ pick: {} }], 'Expected `pick.hour` to be a string, got undefined'],
    ['answerToolCall', ['t1', 'c1', 'done'], 'Expected `answer` to be {content} or {error}, got `done` (string)'],
    ['answerToolCall', ['t1', 'c1', {}], 'Expected `answer` to be {content} or {error}, got an object with no keys'],
    [
      'answerToolCall',
      ['t1', 'c1', { content: 'a', error: 'b' }],
      'Expected `answer` to be {content} or {error}, got an object with content, error',
    ],
    ['answerToolCall', ['t1', 'c1', { error: '' }], 'Expected `answer.error` to be a non-empty string, got `` (string)'],
    ['answerToolCall', ['t1', '', { content: 'x' }], 'Expected `callId` to be a non-empty string'],
    ['annotate', ['t1', [1]], 'Expected `meta` to be an object of annotations, got an array'],
    ['annotate', ['t1', null], 'Expected `meta` to be an object of annotations, got null'],
    ['annotate', ['t1', { channel: 'x' }], 'Expected `meta` not to set `channel`: the broker writes it'],
  ] as const)('%s(%j) is refused in one line', (method, args, message) => {
    expect(problem(() => checkArgs(method, args as unknown as never))).toBe(message);
  });

  test('clean values: no query is every task, times normalized, extra states dropped, a null reason none', () => {
    expect(checkArgs('listTaskPage', [null as never])).toEqual([{}]);
    expect(checkArgs('insights', [{ since: '2026-01-02T03:04:05Z', junk: 1 } as never])).toEqual([{ since: '2026-01-02T03:04:05.000Z' }]);
    const many = checkArgs('listTaskPage', [{ state: Array(10).fill('failed') }])[0];
    expect(many.state).toHaveLength(7);
    expect(checkArgs('cancel', ['t1', null as never])).toEqual(['t1', undefined]);
    expect(checkArgs('answer', ['t1', 'q1', ''])).toEqual(['t1', 'q1', '', undefined]);
    expect(checkArgs('answer', ['t1', 'q1', 'yes', 'panel'])).toEqual(['t1', 'q1', 'yes', 'panel']);
    expect(() => checkArgs('answer', ['t1', 'q1', 'yes', 'the moon' as never])).toThrow(/via/);
    expect(checkArgs('answerToolCall', ['t1', 'c1', { content: null }])).toEqual(['t1', 'c1', { content: null }]);
    expect(checkArgs('answerToolCall', ['t1', 'c1', { error: 'no such file' }])).toEqual(['t1', 'c1', { error: 'no such file' }]);
    expect(checkArgs('annotate', ['t1', { bridge_guard: { violations: 1 } }])).toEqual(['t1', { bridge_guard: { violations: 1 } }]);
  });
});
