import { describe, expect, test } from 'vitest';
import {
  describePartial,
  failureOf,
  failureReasonOf,
  isActive,
  isFailed,
  isFailedOrRetrying,
  isFault,
  isStateFilter,
  STATE_FILTER_NAMES,
  STATE_FILTERS,
  stateInWords,
} from '../../src/model/states.js';
import { isFinished, TASK_STATES, type TaskState } from '../../src/model/task.js';

/** The states for which `predicate` holds, in lifecycle order. */
function where(predicate: (state: TaskState) => boolean): TaskState[] {
  return TASK_STATES.filter(predicate);
}

describe('state predicates', () => {
  test('active means running or retrying (what every count and filter calls "running")', () => {
    expect(where(isActive)).toEqual(['running', 'retrying']);
  });

  test('failed means finished without succeeding; a fault leaves out the cancelled', () => {
    expect(where(isFailed)).toEqual(['failed', 'cancelled', 'interrupted']);
    expect(where(isFault)).toEqual(['failed', 'interrupted']);
    expect(where(isFailedOrRetrying)).toEqual(['retrying', 'failed', 'cancelled', 'interrupted']);
  });

  test('every state is exactly one of queued, active or finished', () => {
    for (const state of TASK_STATES) {
      expect([state === 'queued', isActive(state), isFinished(state)].filter(Boolean)).toHaveLength(1);
    }
  });
});

describe('state filters', () => {
  test('each filter of a task list names the states it lists', () => {
    expect(STATE_FILTER_NAMES).toEqual(['running', 'queued', 'finished', 'failed']);
    expect(where(STATE_FILTERS.running)).toEqual(['running', 'retrying']);
    expect(where(STATE_FILTERS.queued)).toEqual(['queued']);
    expect(where(STATE_FILTERS.finished)).toEqual(['succeeded', 'failed', 'cancelled', 'interrupted']);
    expect(where(STATE_FILTERS.failed)).toEqual(['failed', 'interrupted']);
  });

  test('only the filter names are filters', () => {
    expect(isStateFilter('failed')).toBe(true);
    expect(isStateFilter('retrying')).toBe(false);
    expect(isStateFilter('hasOwnProperty')).toBe(false);
  });
});

describe('failureOf', () => {
  const base = { label: 'review', message: 'failed: rate limited' };

  test('a finished, unsuccessful snapshot gives its recorded reason and message', () => {
    expect(failureOf({ ...base, state: 'failed', reason: 'error' })).toEqual({ reason: 'error', message: 'failed: rate limited' });
  });

  test('a running, queued or succeeded snapshot has no failure', () => {
    for (const state of ['queued', 'running', 'retrying', 'succeeded'] as const) expect(failureOf({ ...base, state })).toBeUndefined();
  });

  test('an old history line without a reason counts as cancelled when cancelled and crashed otherwise', () => {
    expect(failureReasonOf({ state: 'cancelled' })).toBe('cancelled');
    expect(failureReasonOf({ state: 'interrupted' })).toBe('crashed');
    expect(failureOf({ label: 'review', state: 'failed' })).toEqual({ reason: 'crashed', message: 'review: failed' });
  });
});

describe('describePartial', () => {
  test('a partial says what it does in its first text field, on one line', () => {
    expect(describePartial({ progress: 40, step: 'reading\n  files' })).toBe('reading files');
    expect(describePartial({ message: 'first', step: 'second' })).toBe('first');
    expect(describePartial({ phase: 'planning' })).toBe('planning');
    expect(describePartial('plain text')).toBe('plain text');
  });

  test('a partial without text says nothing, and a long one is cut to 120 characters', () => {
    expect(describePartial({ progress: 40 })).toBe('');
    expect(describePartial(null)).toBe('');
    expect(describePartial('x'.repeat(300))).toHaveLength(120);
  });
});

describe('a state in words', () => {
  test('a task whose agent outlives the hub reads "running (recovering)"; a question or a tool call waiting says so first', () => {
    expect(stateInWords({ state: 'running' })).toBe('running');
    expect(stateInWords({ state: 'running', recovering: true })).toBe('running (recovering)');
    const askedAt = '2026-01-01T00:00:00Z';
    expect(stateInWords({ state: 'running', recovering: true, pendingQuestion: { askId: 'a', question: 'q', askedAt } })).toBe(
      'needs answer',
    );
  });
});
