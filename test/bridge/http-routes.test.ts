/** The HTTP routes are derived from the one route table, in both directions, and agree with each other. */
import { describe, expect, test } from 'vitest';
import { BRIDGE_METHODS, checkArgs, ROUTES, type BridgeMethod } from '../../src/bridge/calls.js';
import { buildRequest, parseRequest } from '../../src/bridge/http-routes.js';

/** One valid argument list per call. */
const SAMPLE_ARGS: { [M in BridgeMethod]: unknown[] } = {
  info: [],
  listTasks: [],
  listTaskPage: [{ limit: 50, before: '2026-11-02T10:00:00.000Z~t1', state: ['failed', 'interrupted'] }],
  getTask: ['t/1 ?'],
  taskResult: ['t/1 ?'],
  submit: [{ command: 'node', args: ['a'] }],
  cancel: ['t1', 'no longer needed'],
  retry: ['t1'],
  answer: ['t1', 'q1', 'yes'],
  answerToolCall: ['t1', 'call 1', { content: { lines: ['a', 'b'] } }],
  setPaused: [true],
  openLog: [],
  fleet: [],
  insights: [{ by: 'model', since: '2026-11-02T10:00:00.000Z', pick: { hour: '2026-11-02T10:00:00.000Z', key: 'm' } }],
  attachment: ['t1', 'report 1.md'],
  taskChange: ['t1'],
  applyChanges: [['t1', 't2']],
  discardChange: ['t1'],
  keepBranch: ['t1'],
  listWorktrees: [],
  listSchedules: [],
  getSchedule: ['nightly build', { limit: 20, before: 40 }],
  addSchedule: [{ name: 'nightly', cron: '0 3 * * *', tz: 'Europe/Berlin', command: ['node', 'a.js'] }],
  setSchedulePaused: ['nightly/1', true],
  removeSchedule: ['nightly'],
  runScheduleNow: ['nightly'],
};

describe('http routes', () => {
  test.each(BRIDGE_METHODS)('%s survives buildRequest → JSON → parseRequest unchanged', (method) => {
    const args = checkArgs(method, SAMPLE_ARGS[method]);
    const request = buildRequest(method, args);
    const body = request.body === undefined ? undefined : JSON.parse(JSON.stringify(request.body));
    expect(request.verb).toBe(ROUTES[method].verb);
    expect(parseRequest(request.verb, request.path, body)).toEqual({ method, args });
  });

  test('the wire format is the documented one', () => {
    expect(buildRequest('getTask', ['a/b'])).toEqual({ verb: 'GET', path: '/api/tasks/a%2Fb' });
    expect(buildRequest('answer', ['t1', 'q1', 'x'])).toEqual({
      verb: 'POST',
      path: '/api/tasks/t1/answer',
      body: { askId: 'q1', answer: 'x' },
    });
    expect(buildRequest('setPaused', [false])).toEqual({ verb: 'PUT', path: '/api/paused', body: { paused: false } });
    expect(buildRequest('submit', [{ command: 'c' }])).toEqual({ verb: 'POST', path: '/api/tasks', body: { command: 'c' } });
    expect(buildRequest('openLog', [])).toEqual({ verb: 'POST', path: '/api/log/open' });
    expect(buildRequest('cancel', ['t1', 'why'])).toEqual({ verb: 'POST', path: '/api/tasks/t1/cancel', body: { reason: 'why' } });
  });

  test('unknown routes, wrong verbs and badly encoded ids are no route', () => {
    expect(parseRequest('GET', '/api/nothing', undefined)).toBeUndefined();
    expect(parseRequest('DELETE', '/api/tasks/t1', undefined)).toBeUndefined();
    expect(parseRequest('GET', '/api/tasks/%E0%A4%A', undefined)).toBeUndefined();
    expect(parseRequest('POST', '/api/log/other', undefined)).toBeUndefined();
    expect(parseRequest('GET', '/api/tasks/a/b', undefined)).toBeUndefined();
  });

  test('checkArgs refuses wrong arguments with invalid_request', () => {
    expect(() => checkArgs('setPaused', ['yes'])).toThrow(/`paused` to be a boolean/);
    expect(() => checkArgs('getTask', [42])).toThrow(/`id` to be a string/);
    expect(() => checkArgs('info', 'not an array')).toThrow(/to be an array/);
  });
});
