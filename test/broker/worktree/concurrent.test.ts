/**
 * Worktrees made and discarded at once on one repository. Git writes a worktree's admin directory
 * (.git/worktrees/<name>) in steps and every worktree command reads them all: run together, `git
 * worktree add` failed with "failed to read .git/worktrees/tree/commondir" (the suite's failure
 * under load, three coding tasks on one repository). The broker runs them one at a time per repository.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { Worktrees } from '../../../src/broker/worktree/worktrees.js';
import { tempDir } from '../../helpers/core.js';
import { linkedWorktrees, makeRepo, ourBranches } from '../../helpers/git-repo.js';

const AT_ONCE = 12;

describe('worktrees on one repository at once', () => {
  test(`${AT_ONCE} made at once all succeed, and ${AT_ONCE} discarded at once leave nothing`, async () => {
    const repo = makeRepo();
    const worktrees = new Worktrees(path.join(tempDir('bc-wt-'), 'worktrees'));
    for (let round = 0; round < 6; round++) {
      const plan = worktrees.plan(repo, {});
      const ids = Array.from({ length: AT_ONCE }, () => randomUUID());
      const made = await Promise.allSettled(ids.map((id, i) => worktrees.create(id, plan, `task ${i}`)));
      expect(made.filter((m) => m.status === 'rejected').map((m) => String((m as PromiseRejectedResult).reason))).toEqual([]);
      const records = made.map((m) => (m as PromiseFulfilledResult<Awaited<ReturnType<Worktrees['create']>>>).value);
      expect(records.every((r) => existsSync(r.cwd))).toBe(true);
      expect(linkedWorktrees(repo)).toHaveLength(AT_ONCE);
      const discarded = await Promise.allSettled(ids.map((id) => worktrees.discard(id)));
      expect(discarded.filter((d) => d.status === 'rejected').map((d) => String((d as PromiseRejectedResult).reason))).toEqual([]);
      expect(linkedWorktrees(repo)).toEqual([]);
      expect(ourBranches(repo)).toEqual([]);
    }
  }, 120_000);
});
