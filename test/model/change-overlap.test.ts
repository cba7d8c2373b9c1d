/** The combined review of several tasks' diffs (src/model/change-overlap.ts), on diffs made by real git. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { changedRuns, combineChanges, parseUnifiedDiff } from '../../src/model/change-overlap.js';
import { gitIn, lines, makeRepo } from '../helpers/git-repo.js';

/** The diff git makes when `edit` is applied to the repo's files (then undone). */
function diffOf(repo: string, files: Record<string, string | null>): string {
  for (const [name, content] of Object.entries(files)) {
    if (content === null) gitIn(repo, 'rm', '-q', name);
    else writeFileSync(path.join(repo, name), content);
  }
  gitIn(repo, 'add', '-A');
  const diff = gitIn(repo, 'diff', '--cached', '--binary', 'HEAD');
  gitIn(repo, 'reset', '-q', '--hard', 'HEAD');
  return diff;
}

const BASE = lines(40);
const replace = (text: string, line: number, by: string) => {
  const all = text.split('\n');
  all[line - 1] = by;
  return all.join('\n');
};

describe('combined review', () => {
  test('hunks on the same line, on adjacent lines, and far apart', () => {
    const repo = makeRepo({ 'a.txt': BASE, 'b.txt': BASE });
    const one = diffOf(repo, { 'a.txt': replace(BASE, 10, 'one'), 'b.txt': replace(BASE, 5, 'one') });
    const two = diffOf(repo, { 'a.txt': replace(BASE, 11, 'two'), 'b.txt': replace(BASE, 30, 'two') });
    const three = diffOf(repo, { 'a.txt': replace(BASE, 10, 'three') });
    const view = combineChanges([
      { taskId: 't1', diff: one },
      { taskId: 't2', diff: two },
      { taskId: 't3', diff: three },
    ]);
    expect(view.files.map((file) => [file.path, file.parts.map((part) => part.taskId)])).toEqual([
      ['a.txt', ['t1', 't2', 't3']],
      ['b.txt', ['t1', 't2']],
    ]);
    const pairs = view.overlaps.map((o) => `${o.path} ${o.a.taskId}-${o.b.taskId} ${o.lines.from}-${o.lines.to}`);
    // Line 10 and 11 are adjacent; 10 and 10 the same; 11 and 10 adjacent again. b.txt: 5 and 30 are far apart.
    expect(pairs).toEqual(['a.txt t1-t2 10-11', 'a.txt t1-t3 10-10', 'a.txt t2-t3 10-11']);
  });

  test('two lines apart is not flagged; an insertion right after a changed line is', () => {
    const repo = makeRepo({ 'a.txt': BASE });
    const one = diffOf(repo, { 'a.txt': replace(BASE, 10, 'one') });
    const apart = diffOf(repo, { 'a.txt': replace(BASE, 12, 'apart') });
    const inserted = diffOf(repo, { 'a.txt': replace(BASE, 10, 'line 10\ninserted') });
    expect(
      combineChanges([
        { taskId: 'a', diff: one },
        { taskId: 'b', diff: apart },
      ]).overlaps,
    ).toEqual([]);
    expect(
      combineChanges([
        { taskId: 'a', diff: one },
        { taskId: 'c', diff: inserted },
      ]).overlaps,
    ).toHaveLength(1);
  });

  test('changed runs are measured on the base, context left out', () => {
    const repo = makeRepo({ 'a.txt': BASE });
    const [file] = parseUnifiedDiff(diffOf(repo, { 'a.txt': replace(replace(BASE, 5, 'x'), 8, 'line 8\nadded') }));
    expect(file!.hunks).toHaveLength(1);
    expect(changedRuns(file!.hunks[0]!)).toEqual([
      { from: 5, to: 5 },
      { from: 8.5, to: 8.5 },
    ]);
  });

  test('a file one task deletes or adds while another changes it is flagged as a whole', () => {
    const repo = makeRepo({ 'a.txt': BASE });
    const deleted = diffOf(repo, { 'a.txt': null });
    const changed = diffOf(repo, { 'a.txt': replace(BASE, 40, 'end') });
    const addedOne = diffOf(repo, { 'new.txt': 'x\n' });
    const addedTwo = diffOf(repo, { 'new.txt': 'y\n' });
    const view = combineChanges([
      { taskId: 'd', diff: deleted },
      { taskId: 'c', diff: changed },
      { taskId: 'n1', diff: addedOne },
      { taskId: 'n2', diff: addedTwo },
    ]);
    expect(view.overlaps.map((o) => [o.path, o.kind, o.a.taskId, o.b.taskId])).toEqual([
      ['a.txt', 'file', 'd', 'c'],
      ['new.txt', 'file', 'n1', 'n2'],
    ]);
    expect(parseUnifiedDiff(deleted)[0]).toMatchObject({ path: 'a.txt', status: 'deleted' });
  });
});
