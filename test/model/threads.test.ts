import { describe, expect, test } from 'vitest';
import { groupThreads, type ThreadRun } from '../../src/model/threads.js';

const at = (second: number) => `2026-12-01T10:00:${String(second).padStart(2, '0')}.000Z`;
const run = (id: string, second: number, parent?: string): ThreadRun => ({ id, createdAt: at(second), ...(parent ? { parent } : {}) });

/** Each thread as "key: run,run,… → head", sorted by key. */
function shape(tasks: ThreadRun[]): string[] {
  return groupThreads(tasks)
    .threads.map((thread) => `${thread.key}: ${thread.runs.map((r) => r.id).join(',')} → ${thread.head.id}`)
    .sort();
}

describe('groupThreads', () => {
  test('a task and its follow-ups are one thread, oldest first, the newest as its head; other tasks are threads of one', () => {
    const tasks = [run('c', 30, 'b'), run('x', 5), run('a', 10), run('b', 20, 'a'), run('y', 40)];
    expect(shape(tasks)).toEqual(['a: a,b,c → c', 'x: x → x', 'y: y → y']);
    const index = groupThreads(tasks);
    for (const id of ['a', 'b', 'c']) expect(index.byTask.get(id)?.key).toBe('a');
    expect(index.byTask.get('x')?.runs).toHaveLength(1);
  });

  test('the order of the input does not matter', () => {
    const tasks = [run('a', 10), run('b', 20, 'a'), run('c', 30, 'b'), run('d', 40, 'c')];
    const expected = ['a: a,b,c,d → d'];
    expect(shape(tasks)).toEqual(expected);
    expect(shape([...tasks].reverse())).toEqual(expected);
    expect(shape([tasks[2]!, tasks[0]!, tasks[3]!, tasks[1]!])).toEqual(expected);
  });

  test('two follow-ups of one run (an explicit parent) stay in its thread, ordered by creation', () => {
    expect(shape([run('a', 10), run('b', 20, 'a'), run('c', 30, 'a')])).toEqual(['a: a,b,c → c']);
  });

  test('a parent not among the tasks (not loaded yet, or gone) starts the thread at the linking run', () => {
    expect(shape([run('b', 20, 'a'), run('c', 30, 'b')])).toEqual(['b: b,c → c']);
    // Once the parent is there, the thread is named after it.
    expect(shape([run('b', 20, 'a'), run('c', 30, 'b'), run('a', 10)])).toEqual(['a: a,b,c → c']);
  });

  test('equal creation times are ordered by id (uuidv7 ids sort by time)', () => {
    expect(shape([run('02', 10, '01'), run('01', 10)])).toEqual(['01: 01,02 → 02']);
  });

  test('a cycle of parent links ends the walk where it closes (every task in exactly one thread)', () => {
    const index = groupThreads([run('a', 10, 'c'), run('b', 20, 'a'), run('c', 30, 'b'), run('z', 1, 'z')]);
    const runs = index.threads.flatMap((thread) => thread.runs.map((r) => r.id)).sort();
    expect(runs).toEqual(['a', 'b', 'c', 'z']);
    expect(new Set(['a', 'b', 'c'].map((id) => index.byTask.get(id)))).toHaveProperty('size', 1);
    expect(index.byTask.get('z')?.runs.map((r) => r.id)).toEqual(['z']);
  });

  test('a thousand-run chain is grouped without recursion', () => {
    const tasks = Array.from({ length: 1000 }, (_, i) => ({
      id: `t${String(i).padStart(4, '0')}`,
      createdAt: new Date(Date.UTC(2026, 11, 1, 10) + i * 1000).toISOString(),
      ...(i > 0 ? { parent: `t${String(i - 1).padStart(4, '0')}` } : {}),
    }));
    const index = groupThreads(tasks.reverse());
    expect(index.threads).toHaveLength(1);
    expect(index.threads[0]!.head.id).toBe('t0999');
    expect(index.threads[0]!.runs[0]!.id).toBe('t0000');
  });
});
