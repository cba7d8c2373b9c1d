/**
 * A coding task whose change is huge (X5: a ~420 MB file crashed the hub with "Invalid string
 * length"; 200 MB left it at about 1 GB): the hub streams the diff from git to its file, so it
 * survives, records the change, keeps the diff whole on disk, refuses to show it in memory with what
 * to do instead, applies it from the file — and its peak memory does not grow with the diff.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture } from '../../helpers/core.js';
import { makeRepo } from '../../helpers/git-repo.js';
import { cli, hubEnv, start, startHub } from '../../hub/control/hub-process.js';

/** `backchannel <args>` run in `cwd` to the end. */
async function cliIn(cwd: string, args: string[], env: NodeJS.ProcessEnv) {
  const proc = start(args, env, cwd);
  const code = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** The peak resident memory of process `pid` so far (VmHWM), in bytes. */
function peakMemory(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM for process ${pid}`);
  return Number(match[1]) * 1024;
}

async function lastBytes(file: string, count: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(count);
    await handle.read(buffer, 0, count, size - count);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

const MB = 1024 * 1024;
const LINE = 'a line of the huge generated file, padded to 64 bytes '.padEnd(63, '.') + '\n';
// 160 MB: the old code held the diff three times over (git's output, the string, the bytes written),
// above 450 MB more; the streamed one holds none of it.
const BYTES = 160 * MB;

describe('a coding task with a huge change on the hub', () => {
  test(
    'the hub survives with bounded memory, the diff is whole on disk, `diff` refuses with what to do, `apply` applies it',
    { timeout: 300_000 },
    async () => {
      expect(BYTES % LINE.length).toBe(0);
      const hub = hubEnv();
      const proc = await startHub(hub);
      const pid = proc.child.pid!;
      const repo = makeRepo();
      const baseline = peakMemory(pid);

      const input = JSON.stringify({ edits: [{ path: 'huge.txt', fill: { line: LINE, bytes: BYTES } }] });
      const run = await cliIn(repo, ['run', '--worktree', '--json', '--input', input, '--', fixture('coder.mjs')], hub.env);
      expect(run.code, run.stderr).toBe(0);
      const taskId = (JSON.parse(run.stdout) as { task_id: string }).task_id;

      // The hub is alive and recorded the change.
      expect(proc.child.exitCode).toBeNull();
      const shown = await cli(['show', '--json', taskId], hub.env);
      expect(shown.code, shown.stderr).toBe(0);
      const change = (JSON.parse(shown.stdout) as { task: { change: { files: unknown[]; insertions: number } } }).task.change;
      expect(change.files).toEqual([{ path: 'huge.txt', status: 'added', insertions: BYTES / LINE.length, deletions: 0 }]);

      // The diff is whole on disk: every line of the file, '+'-prefixed, after the header.
      const worktrees = path.join(hub.dir, 'data', 'worktrees');
      const [entry] = readdirSync(worktrees).filter((name) => !name.startsWith('.'));
      const diffFile = path.join(worktrees, entry!, 'change.diff');
      const header = `diff --git a/huge.txt b/huge.txt\nnew file mode 100644\n`;
      expect(readFileSync(diffFile, 'utf8').slice(0, header.length)).toBe(header);
      expect(statSync(diffFile).size).toBeGreaterThan(BYTES + BYTES / LINE.length);
      expect(await lastBytes(diffFile, LINE.length + 1)).toBe(`+${LINE}`);

      // Too big to show in memory: one line saying its size and what to do instead.
      const diff = await cli(['diff', taskId], hub.env);
      expect(diff.code).not.toBe(0);
      expect(diff.stderr.trim().split('\n')).toHaveLength(1);
      expect(diff.stderr).toMatch(
        /the diff of task \S+ is \d+ MB, more than the 32 MB shown here; apply it with `backchannel apply \w+`, or read it from \S+change\.diff/,
      );

      // Applied from the file: the user's checkout gets the whole file.
      const applied = await cli(['apply', taskId], hub.env);
      expect(applied.code, applied.stderr).toBe(0);
      expect(statSync(path.join(repo, 'huge.txt')).size).toBe(BYTES);
      expect(await lastBytes(path.join(repo, 'huge.txt'), LINE.length)).toBe(LINE);

      // Still alive, and its peak grew by far less than the diff.
      expect(proc.child.exitCode).toBeNull();
      const grown = peakMemory(pid) - baseline;
      expect(grown, `the hub's peak memory grew by ${Math.round(grown / MB)} MB`).toBeLessThan(100 * MB);
    },
  );
});
