import { describe, expect, test } from 'vitest';
import {
  BridgeError,
  BROKER_ERROR_CODES,
  ERROR_CODE_LIST,
  ERROR_CODES,
  errorFromBody,
  exitCodeOf,
  fromCoreError,
  httpStatusOf,
  mcpErrorOf,
  toErrorBody,
} from '../../src/model/errors.js';
import { BrokerError } from '../../src/broker/errors.js';

describe('the one error table', () => {
  test('keeps the wire values and HTTP statuses existing clients know', () => {
    expect(Object.fromEntries(ERROR_CODE_LIST.map((code) => [code, httpStatusOf(code)]))).toEqual({
      invalid_request: 400,
      not_found: 404,
      conflict: 409,
      refused: 403,
      internal: 500,
      hub_lost: 503,
    });
    expect(Object.keys(ERROR_CODES)).toEqual(['invalid_request', 'not_found', 'conflict', 'refused', 'internal', 'hub_lost']);
  });

  test('says the CLI exit code and the MCP error code of each', () => {
    expect(exitCodeOf(new BridgeError('invalid_request', 'x'))).toBe(2);
    expect(exitCodeOf(new BridgeError('not_found', 'x'))).toBe(1);
    expect(exitCodeOf(new Error('boom'))).toBe(1);
    expect(mcpErrorOf(new BrokerError('refused', 'not allowed'))).toEqual({
      code: -32602,
      message: 'not allowed',
      data: { code: 'refused' },
    });
    expect(mcpErrorOf(new Error('boom'))).toEqual({ code: -32603, message: 'boom', data: { code: 'internal' } });
    expect(mcpErrorOf(new BridgeError('conflict', 'busy', { taskId: 't1' })).data).toEqual({ taskId: 't1', code: 'conflict' });
  });

  test('maps every core error code once (the hub bridge and the worktree registry both use it)', () => {
    expect(BROKER_ERROR_CODES).toMatchObject({
      unknown_task: 'not_found',
      invalid_option: 'invalid_request',
      not_retryable: 'conflict',
      closed: 'conflict',
      worktree: 'conflict',
      refused: 'refused',
    });
    const core = new BrokerError('worktree', 'task t1 is still working');
    const error = fromCoreError(core);
    expect(error).toMatchObject({ code: 'conflict', message: 'task t1 is still working', cause: core });
    expect(fromCoreError(Object.assign(new Error('no such file'), { code: 'ENOENT' })).code).toBe('internal');
    expect(fromCoreError('a string')).toMatchObject({ code: 'internal', message: 'a string' });
  });

  test('a body carries data only when there is some, and survives JSON', () => {
    expect(new BridgeError('not_found', 'No task t1').toBody()).toEqual({ error: { code: 'not_found', message: 'No task t1' } });
    const body = JSON.parse(JSON.stringify(toErrorBody(new BridgeError('refused', 'no', { door: 'mcp' }))));
    expect(body).toEqual({ error: { code: 'refused', message: 'no', data: { door: 'mcp' } } });
    const back = errorFromBody(body);
    expect(BridgeError.is(back)).toBe(true);
    expect(back).toMatchObject({ code: 'refused', message: 'no', data: { door: 'mcp' } });
    expect(errorFromBody({ error: { code: 'teapot', message: 'short and stout' } }).code).toBe('internal');
    expect(errorFromBody('nonsense').message).toBe('Malformed error from the bridge host');
  });
});
