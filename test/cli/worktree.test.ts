/**
 * Coding tasks from the CLI, with and without a hub (docs/coding-agents.md): `run --worktree` runs
 * three agents on one repository, `diff` shows each change and several together with overlaps
 * flagged, `apply` brings two in (the third refused, nothing half-applied), `discard` leaves nothing.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, fixture, tempDir } from '../helpers/core.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';
import { checkoutHash, lines, linkedWorktrees, makeRepo, ourBranches } from '../helpers/git-repo.js';

const BIN = path.join(ROOT, 'bin/backchannel.js');

function runCli(args: string[], env: Record<string, string>, cwd = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const edits = (...list: Array<{ path: string; content: string }>) => JSON.stringify({ edits: list });
const A = lines(12, 'a');

// 120 s a test: each runs a dozen CLI processes one after another, slow on a busy machine.
describe.each(RUN_MODES)('coding tasks from the CLI (%s)', { timeout: 120_000 }, (mode) => {
  const where = runMode(mode);
  // Without a hub the worktrees go to the default data directory: a private one here.
  const state = path.join(tempDir('bc-state-'), 'state');
  const env = () => ({ XDG_STATE_HOME: state, CURSOR_IPC_DIR: path.join(state, 'ipc'), ...where.env() });
  const cli = (args: string[], cwd?: string) => runCli(args, env(), cwd);

  test('three agents on one repository: review each, review two together, apply two, discard all', async () => {
    const repo = makeRepo({ 'a.txt': A, 'b.txt': lines(12, 'b') });
    const before = checkoutHash(repo);
    const runs = await Promise.all([
      cli(
        [
          'run',
          '--worktree',
          '--json',
          '--input',
          edits({ path: 'a.txt', content: A.replace('a 2\n', 'A2\n') }),
          '--',
          fixture('coder.mjs'),
        ],
        repo,
      ),
      cli(['run', '--worktree', '--json', '--input', edits({ path: 'b.txt', content: 'b only\n' }), '--', fixture('coder.mjs')], repo),
      cli(
        [
          'run',
          '--worktree',
          '--json',
          '--input',
          edits({ path: 'a.txt', content: A.replace('a 3\n', 'three\n') }),
          '--',
          fixture('coder.mjs'),
        ],
        repo,
      ),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(checkoutHash(repo)).toBe(before);
    const list = await cli(['worktrees', '--json']);
    const records = JSON.parse(list.stdout) as Array<{ taskId: string; state: string; cwd: string }>;
    const cwds = runs.map((run) => (JSON.parse(run.stdout) as { data: { cwd: string } }).data.cwd);
    const ids = cwds.map((cwd) => records.find((record) => record.cwd === cwd)!.taskId);
    expect(records.map((record) => record.state)).toEqual(['ready', 'ready', 'ready']);

    const one = await cli(['diff', ids[0]!]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('+A2');
    expect(one.stdout).not.toContain('\x1b['); // not a terminal: no colour
    const stat = await cli(['diff', '--stat', ids[1]!]);
    expect(stat.stdout).toMatch(/modified\s+\+1 −12\s+b\.txt/);

    // Together: the first and the third touch adjacent lines of a.txt.
    const both = await cli(['diff', ids[0]!, ids[2]!]);
    expect(both.stdout).toMatch(/^!! 1 overlap in 1 file: a\.txt$/m);
    expect(both.stdout).toMatch(/!! overlaps #2 .* \(base lines 2–3\)/);
    const bothJson = JSON.parse((await cli(['diff', '--json', ids[0]!, ids[2]!])).stdout) as { overlaps: unknown[] };
    expect(bothJson.overlaps).toHaveLength(1);

    // Every id form the review prints names its task again: the short id after `#n`, and the branch.
    const short = both.stdout.match(/--- task #1 ([0-9a-f]{12})\b/)?.[1];
    expect(short).toBe(ids[0]!.replace(/-/g, '').slice(-12));
    expect((await cli(['diff', '--stat', short!])).stdout).toMatch(/a\.txt/);
    expect((await cli(['diff', '--stat', `backchannel/${short}`])).code).toBe(0);
    // Three tasks started together share the start of their UUIDv7: an ambiguous start names the short ids.
    const common = ids[0]!.slice(
      0,
      [...ids[0]!].findIndex((c, i) => ids.some((id) => id[i] !== c)),
    );
    if (common.length > 0) {
      const ambiguous = await cli(['diff', common]);
      expect(ambiguous.code).toBe(2);
      expect(ambiguous.stderr).toContain(ids[0]!.replace(/-/g, '').slice(-12));
    }

    // All three in this order: the third conflicts, nothing changes.
    const refused = await cli(['apply', ids[0]!, ids[1]!, ids[2]!]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(new RegExp(`the change of task ${ids[2]} does not apply cleanly .*\\(a\\.txt\\); nothing was changed`));
    expect(checkoutHash(repo)).toBe(before);

    const applied = await cli(['apply', ids[0]!, ids[1]!]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toBe('Applied 2 changes (2 files): a.txt, b.txt\n');
    expect(readFileSync(path.join(repo, 'a.txt'), 'utf8')).toContain('A2\n');
    expect(readFileSync(path.join(repo, 'b.txt'), 'utf8')).toBe('b only\n');

    const discarded = await cli(['discard', ...ids]);
    expect(discarded.code, discarded.stderr).toBe(0);
    expect(ourBranches(repo)).toEqual([]);
    expect(linkedWorktrees(repo)).toEqual([]);
    expect((await cli(['worktrees'])).stdout).toBe('No worktrees.\n');
    for (const cwd of cwds) expect(existsSync(cwd)).toBe(false);
  });

  test('a follow-up continues in the same worktree, resuming the agent’s session; keep-branch keeps the whole thread’s work', async () => {
    const repo = makeRepo();
    const first = await cli(
      ['run', '--worktree', '--json', '--input', edits({ path: 'one.txt', content: '1\n' }), '--', fixture('coder.mjs')],
      repo,
    );
    expect(first.code, first.stderr).toBe(0);
    const firstPayload = JSON.parse(first.stdout) as { data: { cwd: string }; meta: { session_id: string } };
    const [record] = JSON.parse((await cli(['worktrees', '--json'])).stdout) as Array<{ taskId: string; branch: string }>;
    const prefix = record!.taskId.slice(0, 30);
    const next = await cli(
      ['run', '--follow-up', prefix, '--json', '--input', edits({ path: 'two.txt', content: '2\n' }), '--', fixture('coder.mjs')],
      repo,
    );
    expect(next.code, next.stderr).toBe(0);
    const payload = JSON.parse(next.stdout) as { data: { cwd: string; resumed: string } };
    expect(payload.data).toEqual({ cwd: firstPayload.data.cwd, resumed: firstPayload.meta.session_id });
    const stat = await cli(['diff', '--stat', record!.taskId]);
    expect(stat.stdout).toContain('one.txt');
    expect(stat.stdout).toContain('two.txt');
    const kept = await cli(['discard', '--keep-branch', record!.taskId]);
    expect(kept.stdout).toBe(`Removed the worktree of ${record!.taskId}; kept branch ${record!.branch}\n`);
    expect(ourBranches(repo)).toEqual([record!.branch]);
    expect(linkedWorktrees(repo)).toEqual([]);
    const noBase = await cli(['run', '--follow-up', prefix, '--base', 'main', '--', fixture('coder.mjs')], repo);
    expect(noBase.code).toBe(2);
  });

  test('a coding task’s question names its branch and the files it changed so far', async () => {
    const repo = makeRepo();
    const input = JSON.stringify({ edits: [{ path: 'src/app.ts', content: 'changed\n' }], ask: 'Keep going?' });
    const run = await cli(['run', '--worktree', '--ask-timeout', '1000', '--input', input, '--', fixture('coder.mjs')], repo);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/^\(On branch backchannel\/[0-9a-f]{12}; changed so far: src\/app\.ts\)$/m);
  });

  test('clear one-line refusals: not a repository, a base that does not exist, an unknown task', async () => {
    const plain = tempDir('bc-plain-');
    const notRepo = await cli(['run', '--worktree', '--', fixture('coder.mjs')], plain);
    expect(notRepo.code).toBe(1);
    expect(notRepo.stderr).toMatch(/^backchannel run: .* is not in a git repository; a worktree needs one/m);
    expect(notRepo.stderr).not.toMatch(/\n\s+at /);
    const repo = makeRepo();
    const noBase = await cli(['run', '--worktree', '--base', 'nope', '--', fixture('coder.mjs')], repo);
    expect(noBase.code).toBe(1);
    expect(noBase.stderr).toMatch(/^backchannel run: base "nope" does not exist in /m);
    const baseAlone = await cli(['run', '--base', 'main', '--', fixture('coder.mjs')], repo);
    expect(baseAlone.code).toBe(2);
    expect(baseAlone.stderr).toMatch(/--base needs --worktree/);
    const unknown = await cli(['diff', 'ffffffff']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('backchannel diff: No coding task with an id or short id "ffffffff" has a worktree\n');
    expect(readdirSync(repo).sort()).toEqual(['.git', 'README.md', 'src']);
  });
});
