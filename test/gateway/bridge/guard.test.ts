/** The scratch-path guard: which calls name the workspace, and when they are corrected or forwarded. */
import { describe, expect, test } from 'vitest';
import { findViolation, guardCall, MAX_CORRECTIONS, type GuardCounts } from '../../../src/gateway/bridge/guard.js';

const WS = '/tmp/bc-ws/abc123';

describe('findViolation', () => {
  test.each([
    [{ file_path: `${WS}/notes.md` }, 'file_path'],
    [{ command: `cd ${WS} && ls` }, 'command'],
    [{ command: `ls ${WS}` }, 'command'],
    [{ edits: [{ path: 'a' }, { path: `"${WS}"` }] }, 'edits[1].path'],
    [`${WS}`, 'arguments'],
  ])('a string argument naming the workspace is found: %j', (args, where) => {
    expect(findViolation(args, WS, '/home/user/project')).toMatchObject({ where });
  });

  test.each([
    [{ file_path: '/home/user/project/notes.md' }],
    [{ command: `ls ${WS}2` }],
    [{ command: `ls ${WS}-other/x` }],
    [{ n: 3, ok: true, list: [null] }],
  ])('other arguments pass: %j', (args) => {
    expect(findViolation(args, WS, '/home/user/project')).toBeUndefined();
  });

  test('a host root inside the workspace turns the check off', () => {
    expect(findViolation({ file_path: `${WS}/project/a` }, WS, `${WS}/project`)).toBeUndefined();
  });
});

describe('guardCall', () => {
  test(`corrects ${MAX_CORRECTIONS} calls naming the workspace with the host root, then forwards them; every one is counted`, () => {
    const counts: GuardCounts = { violations: 0, corrections: 0 };
    const bad = { command: `cd ${WS} && ls` };
    for (let i = 0; i < MAX_CORRECTIONS; i++) {
      const verdict = guardCall(bad, WS, '/home/user/project', counts);
      expect(verdict.action).toBe('correct');
      expect(verdict.action === 'correct' && verdict.text).toContain('/home/user/project');
      expect(verdict.action === 'correct' && verdict.text).toContain('`command`');
    }
    expect(guardCall(bad, WS, '/home/user/project', counts)).toEqual({ action: 'forward' });
    expect(guardCall({ command: 'ls' }, WS, '/home/user/project', counts)).toEqual({ action: 'forward' });
    expect(counts).toEqual({ violations: MAX_CORRECTIONS + 1, corrections: MAX_CORRECTIONS });
  });

  test('without a host root the correction says to use host paths from the conversation; without a workspace nothing is checked', () => {
    const counts: GuardCounts = { violations: 0, corrections: 0 };
    const verdict = guardCall({ p: `${WS}/a` }, WS, undefined, counts);
    expect(verdict.action === 'correct' && verdict.text).toMatch(/host paths that appeared in the conversation/);
    expect(guardCall({ p: `${WS}/a` }, undefined, undefined, counts)).toEqual({ action: 'forward' });
  });
});
