/**
 * In which words a task's ending or question notifies a person (src/model/notices.ts), shared by the
 * desktop app and the browser panel. Which changes are news is decided in src/notify/events.ts
 * (test/notify/decide.test.ts).
 */
import { describe, expect, test } from 'vitest';
import { endedNotice, questionNotice } from '../../src/model/notices.js';
import type { TaskSnapshot } from '../../src/model/task.js';

const task = (over: Partial<TaskSnapshot>): TaskSnapshot =>
  ({ id: 't1', label: 'refactor', state: 'running', createdAt: '2026-12-01T20:00:00.000Z', ...over }) as TaskSnapshot;

describe('questionNotice', () => {
  test('a coding task’s question names its branch and the files it changed so far, with a reply field', () => {
    const notice = questionNotice(
      task({
        pendingQuestion: {
          askId: 'q1',
          question: 'Rename the helper too?',
          askedAt: '2026-12-01T20:01:00.000Z',
          worktree: { branch: 'backchannel/01a2327f0000', files: ['src/app.ts', 'README.md'] },
        },
      }),
    );
    expect(notice).toEqual({
      taskId: 't1',
      kind: 'needs_input',
      title: 'Needs an answer: refactor',
      body: 'Rename the helper too?\nOn branch backchannel/01a2327f0000; changed so far: src/app.ts, README.md',
      silent: false,
      answers: { askId: 'q1', reply: true },
    });
  });

  test('a question with choices offers them as the answers; one without a worktree is the question alone', () => {
    const notice = questionNotice(
      task({ pendingQuestion: { askId: 'q2', question: 'Which branch?', choices: ['main', 'dev'], askedAt: '2026-12-01T20:01:00.000Z' } }),
    );
    expect(notice).toMatchObject({ body: 'Which branch?', answers: { askId: 'q2', choices: ['main', 'dev'] } });
  });

  test('a coding task that changed nothing yet says so', () => {
    const notice = questionNotice(
      task({
        pendingQuestion: {
          askId: 'q3',
          question: 'Start?',
          askedAt: '2026-12-01T20:01:00.000Z',
          worktree: { branch: 'backchannel/x', files: [] },
        },
      }),
    );
    expect(notice?.body).toBe('Start?\nOn branch backchannel/x; changed so far: nothing');
  });

  test('no question, no notice', () => {
    expect(questionNotice(task({}))).toBeUndefined();
  });
});

describe('endedNotice', () => {
  test('a success is quiet; a failure says why, loudly; the title says which', () => {
    expect(endedNotice(task({ state: 'succeeded' }))).toMatchObject({ kind: 'ended', title: 'Succeeded: refactor', silent: true });
    expect(endedNotice(task({ state: 'failed', reason: 'crashed', message: 'exited with code 3' }))).toMatchObject({
      title: 'Failed: refactor',
      body: 'exited with code 3',
      silent: false,
    });
  });

  test('a cancelled task says cancelled, an interrupted one failed; a task still working makes none', () => {
    expect(endedNotice(task({ state: 'cancelled', message: 'cancelled by the user' }))?.title).toBe('Cancelled: refactor');
    expect(endedNotice(task({ state: 'interrupted', message: 'the broker stopped' }))?.title).toBe('Failed: refactor');
    for (const state of ['queued', 'running', 'retrying'] as const) expect(endedNotice(task({ state }))).toBeUndefined();
  });
});
