/**
 * Issue 22 item 8, real processes: `tasks`, `show`, `logs`, `wait` and `stats` with no hub read the
 * history on disk read-only. They used to print ~2,780 lines of `RangeError: Maximum call stack size
 * exceeded` (a `close()` that called itself) after opening a whole broker on the history, which
 * swept sockets, adopted spool files and could rewrite the journal. Now they print their output and
 * nothing else, and leave every byte, mtime and file where it was.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { writeHistory } from '../../bench/lib/history.js';
import { tempDir } from '../helpers/core.js';
import { leaveStaleSocket } from '../helpers/processes.js';
import { cli } from '../hub/control/hub-process.js';

const DONE = '01900000-0000-7000-8000-00000000d0e1';
const CUT = '01900000-0000-7000-8000-00000000c0e2';
const BIG = '01900000-0000-7000-8000-00000000b0e3';
/** A result over 64 KiB, which history keeps in results/<id>.json with a summary in the journal. */
const BIG_RESULT = { task_id: BIG, status: 'success', data: { text: 'x'.repeat(70_000) } };

/** A journal: one task that succeeded, one that was running when its broker was killed. */
function journal(): string {
  const at = '2026-01-02T03:04:05.000Z';
  const spec = (label: string) => ({ command: 'node', args: ['agent.mjs'], cwd: '/', label });
  const snapshot = {
    id: DONE,
    label: 'answers',
    state: 'succeeded',
    command: 'node',
    args: ['agent.mjs'],
    cwd: '/',
    attempt: 1,
    maxAttempts: 1,
    createdAt: at,
    startedAt: at,
    endedAt: '2026-01-02T03:04:07.500Z',
    counters: { malformed: 0, rejected: 0, ignored: 0 },
    result: { task_id: DONE, status: 'success', data: { answer: 42 } },
  };
  const big = {
    ...snapshot,
    id: BIG,
    label: 'big one',
    createdAt: '2026-01-02T03:04:06.000Z',
    result: undefined,
    resultSummary: { bytes: JSON.stringify(BIG_RESULT).length, preview: '{"text":"xxx', status: 'success' },
  };
  return (
    [
      { e: 'queued', id: BIG, at: big.createdAt, spec: spec('big one'), maxAttempts: 1 },
      { e: 'ended', id: BIG, at: big.endedAt, task: big },
      { e: 'queued', id: DONE, at, spec: spec('answers'), maxAttempts: 1 },
      { e: 'attempt', id: DONE, at, attempt: 1, pid: 4242 },
      { e: 'ended', id: DONE, at: snapshot.endedAt, task: snapshot },
      { e: 'queued', id: CUT, at: '2026-01-02T03:05:00.000Z', spec: spec('cut short'), maxAttempts: 1 },
      { e: 'attempt', id: CUT, at: '2026-01-02T03:05:00.100Z', attempt: 1, pid: 4243 },
    ]
      .map((record) => JSON.stringify(record))
      .join('\n') + '\n'
  );
}

function listing(dir: string): Array<{ name: string; mtimeMs: number; size: number }> {
  return readdirSync(dir)
    .sort()
    .map((name) => {
      const stat = statSync(path.join(dir, name));
      return { name, mtimeMs: stat.mtimeMs, size: stat.size };
    });
}

describe('the history without a hub, read-only', () => {
  test('tasks, show, logs, wait and stats print only their output (stderr empty, exit 0); the journal, the data directory and the socket directory (a stale spool file, stale sockets) are left exactly as they were', async () => {
    const dir = tempDir('bc-ro-');
    const dataDir = path.join(dir, 'state', 'backchannel');
    const ipcDir = path.join(dir, 'ipc');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(ipcDir, { mode: 0o700 });
    const journalFile = path.join(dataDir, 'journal.ndjson');
    writeFileSync(journalFile, journal(), { mode: 0o600 });
    mkdirSync(path.join(dataDir, 'results'), { mode: 0o700 });
    writeFileSync(path.join(dataDir, 'results', `${BIG}.json`), JSON.stringify(BIG_RESULT), { mode: 0o600 });
    // What a killed hub leaves: its control socket, a task socket, and the spool file of its agent's result.
    await leaveStaleSocket(path.join(dataDir, 'control.sock'));
    await leaveStaleSocket(path.join(ipcDir, 'deadbeefdeadbeefdeadbeef.sock'));
    writeFileSync(path.join(ipcDir, `${CUT}.json`), JSON.stringify({ task_id: CUT, status: 'success', data: { late: true } }) + '\n', {
      mode: 0o600,
    });
    const env = { ...process.env, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: ipcDir };
    delete env.BACKCHANNEL_CONTROL;
    const bytes = readFileSync(journalFile);
    const before = { data: listing(dataDir), ipc: listing(ipcDir), journal: statSync(journalFile).mtimeMs };

    const ok = async (args: string[]): Promise<string> => {
      const { code, stdout, stderr } = await cli(args, env);
      expect({ args, code, stderr }).toEqual({ args, code: 0, stderr: '' });
      return stdout;
    };
    const table = await ok(['tasks']);
    expect(table).toMatch(
      new RegExp(
        `^ID\\s+STATE\\s+PROGRESS\\s+USAGE\\s+CREATED\\s+LABEL\n${CUT}\\s+interrupted\\s+.*cut short\n${BIG}\\s+succeeded\\s+.*big one\n${DONE}\\s+succeeded\\s+.*answers\n$`,
      ),
    );
    const listed = JSON.parse(await ok(['tasks', '--json'])) as Array<{ id: string; state: string }>;
    expect(listed.map((t) => [t.id, t.state])).toEqual([
      [CUT, 'interrupted'],
      [BIG, 'succeeded'],
      [DONE, 'succeeded'],
    ]);
    const shown = await ok(['show', DONE.slice(0, 33)]);
    expect(shown).toMatch(/^id {11}01900000-0000-7000-8000-00000000d0e1\n/);
    expect(shown).toMatch(/state\s+succeeded\n/);
    expect(shown).toContain('"answer": 42');
    expect(await ok(['logs', DONE])).toBe('');
    expect(JSON.parse(await ok(['wait', '--json', DONE]))).toEqual({ task_id: DONE, status: 'success', data: { answer: 42 } });
    expect(await ok(['wait', DONE])).toBe(JSON.stringify({ task_id: DONE, status: 'success', data: { answer: 42 } }, null, 2) + '\n');
    // A big result comes whole from results/<id>.json.
    expect(JSON.parse(await ok(['wait', '--json', BIG]))).toEqual(BIG_RESULT);
    expect(await ok(['stats'])).toMatch(/^agent\s+tasks\s+ok%.*\nagent\.mjs\s+2\s+100\.0\s+2\.5s/);

    // An unfinished task cannot be waited for without a hub: one clear line, exit 1.
    const unfinished = await cli(['wait', CUT], env);
    expect(unfinished.code).toBe(1);
    expect(unfinished.stdout).toBe('');
    expect(unfinished.stderr).toBe(
      `backchannel wait: task ${CUT} has not finished (interrupted in the history on disk); no Backchannel hub is running (start the desktop app or \`backchannel serve\`); this command needs one\n`,
    );

    expect(readFileSync(journalFile).equals(bytes)).toBe(true);
    expect(statSync(journalFile).mtimeMs).toBe(before.journal);
    expect(listing(dataDir)).toEqual(before.data);
    // The spool file was not adopted (removed) and no socket was swept.
    expect(listing(ipcDir)).toEqual(before.ipc);
    expect(readdirSync(ipcDir).sort()).toEqual([`${CUT}.json`, 'deadbeefdeadbeefdeadbeef.sock']);
  });

  test('with no history at all: tasks says so on stdout, creates no data directory, and show names the missing id', async () => {
    const dir = tempDir('bc-ro-');
    const env = { ...process.env, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: path.join(dir, 'ipc') };
    delete env.BACKCHANNEL_CONTROL;
    expect(await cli(['tasks'], env)).toEqual({ code: 0, stdout: 'No tasks in the history (no hub is running).\n', stderr: '' });
    expect(await cli(['show', 'abc'], env)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'backchannel show: No task with an id starting with "abc"\n',
    });
    expect(readdirSync(dir)).toEqual([]);
  });

  test('tasks pages a long history, newest first: --limit past one page, --state across pages', async () => {
    const dir = tempDir('bc-ro-');
    const env = { ...process.env, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: path.join(dir, 'ipc') };
    delete env.BACKCHANNEL_CONTROL;
    const ids: string[] = writeHistory(path.join(dir, 'state', 'backchannel'), {
      count: 1200,
      states: (i: number) => (i % 100 === 7 ? 'failed' : 'succeeded'),
    });
    const newestFirst = [...ids].reverse();
    const listed = await cli(['tasks', '--json', '--limit', '1100'], env);
    expect(listed.stderr).toBe('');
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((t) => t.id)).toEqual(newestFirst.slice(0, 1100));
    const failed = await cli(['tasks', '--json', '--state', 'failed', '--limit', '50'], env);
    expect((JSON.parse(failed.stdout) as { id: string }[]).map((t) => t.id)).toEqual(newestFirst.filter((_, i) => (1199 - i) % 100 === 7));
  });
});
