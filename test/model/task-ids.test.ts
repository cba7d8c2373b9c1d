import { describe, expect, test } from 'vitest';
import { shortTaskId, taskIdsNamedBy } from '../../src/model/task-ids.js';

// Two UUIDv7 ids made in the same minute: their first 8 characters are the same.
const A = '01a2327f-1c2d-7e3f-8a4b-5c6d7e8f9a0b';
const B = '01a2327f-9d8c-7b6a-9f5e-4d3c2b1a0f9e';

describe('task ids a person types', () => {
  test('the short id is the last 12 hex digits, lower case', () => {
    expect(shortTaskId(A)).toBe('5c6d7e8f9a0b');
    expect(shortTaskId(A.toUpperCase())).toBe('5c6d7e8f9a0b');
  });

  test('a whole id, a unique start, the short id and the branch name each name one task', () => {
    expect(taskIdsNamedBy([A, B], A)).toEqual([A]);
    expect(taskIdsNamedBy([A, B], '01a2327f-1c')).toEqual([A]);
    expect(taskIdsNamedBy([A, B], '01a2327f1c2d')).toEqual([A]);
    expect(taskIdsNamedBy([A, B], '5c6d7e8f9a0b')).toEqual([A]);
    // Any unique end of the short id, as the docs say (README "One hub", docs/mcp.md).
    expect(taskIdsNamedBy([A, B], '9a0b')).toEqual([A]);
    expect(taskIdsNamedBy([A, B], 'backchannel/4d3c2b1a0f9e')).toEqual([B]);
    expect(taskIdsNamedBy([A, B], ' 4D3C2B1A0F9E ')).toEqual([B]);
  });

  test('a start shared by two tasks names both (the caller says it is ambiguous); nothing names none', () => {
    expect(taskIdsNamedBy([A, B], '01a2327f')).toEqual([A, B]);
    expect(taskIdsNamedBy([A, B], 'ffff')).toEqual([]);
    expect(taskIdsNamedBy([A, B], '')).toEqual([]);
    expect(taskIdsNamedBy([A, B], 'backchannel/')).toEqual([]);
  });
});
