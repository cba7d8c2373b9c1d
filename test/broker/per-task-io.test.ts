/**
 * Issue 48, round 6 (per task): the file work each task costs the broker, made cheaper without
 * changing what it does — the journal's small batches written on the loop (only the fsync on the
 * thread pool), an agent's start time read from /proc into a reused buffer, and an evicted task's
 * result file looked for before it is removed; the finished tasks past the history limit counted,
 * not copied, at every task's end.
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { silentLogger } from '../../src/broker/log.js';
import { Journal, JOURNAL_FILE, SYNC_WRITE_MAX_BYTES, type JournalRecord } from '../../src/broker/history/journal.js';
import { RESULTS_DIR, ResultStore } from '../../src/broker/history/results.js';
import { processStartTime } from '../../src/broker/process/start-time.js';
import { createTestBroker, fixture, tempDir } from '../helpers/core.js';

const at = new Date().toISOString();

function progress(n: number, partial: unknown): JournalRecord {
  return { e: 'progress', id: `task-${n}`, at, partial };
}

/** The prototype every FileHandle's `write` comes from (the class is not exported by node:fs). */
async function fileHandlePrototype(): Promise<{ write: (...args: unknown[]) => unknown }> {
  const handle = await open(path.join(tempDir(), 'probe'), 'w');
  const proto = Object.getPrototypeOf(handle) as { write: (...args: unknown[]) => unknown };
  await handle.close();
  return proto;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the journal writes a small batch on the loop, a big one off it', () => {
  test('records appended in one turn land whole, in order, with no FileHandle write; a batch over the limit uses one', async () => {
    const dir = tempDir();
    const journal = new Journal(dir, silentLogger);
    await journal.open();
    const writes = vi.spyOn(await fileHandlePrototype(), 'write');
    for (let n = 0; n < 50; n++) journal.append(progress(n, { n }));
    await journal.durable();
    expect(writes).not.toHaveBeenCalled();
    const lines = () => readFileSync(path.join(dir, JOURNAL_FILE), 'utf8').trimEnd().split('\n');
    expect(lines().map((line) => (JSON.parse(line) as { partial: { n: number } }).partial.n)).toEqual(
      Array.from({ length: 50 }, (_, n) => n),
    );

    // Two records of 40 KiB in one turn: a batch over SYNC_WRITE_MAX_BYTES, written through the pool.
    const blob = 'b'.repeat(40 * 1024);
    journal.append(progress(50, blob));
    journal.append(progress(51, blob));
    expect(2 * blob.length).toBeGreaterThan(SYNC_WRITE_MAX_BYTES);
    await journal.durable();
    expect(writes).toHaveBeenCalled();
    expect(lines()).toHaveLength(52);
    expect((JSON.parse(lines()[51]) as { partial: string }).partial).toBe(blob);
    await journal.close();

    // What was written reads back as the records appended.
    const reread = new Journal(dir, silentLogger).load();
    expect(reread.skippedLines).toBe(0);
  });
});

describe("an agent's start time", () => {
  test('is field 22 of /proc/<pid>/stat, for this process and for a child; undefined once the pid is gone', async () => {
    const field22 = (pid: number) => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    };
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
    expect(processStartTime(process.pid)).toBe(field22(process.pid));
    // A command name with spaces and a ')' in it: the fields are counted after the last ')'.
    const child = spawn('sh', ['-c', 'exec -a "a b) c" sleep 30'], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('spawn', resolve));
    try {
      const start = processStartTime(child.pid!);
      expect(start).toMatch(/^\d+$/);
      expect(start).toBe(field22(child.pid!));
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    expect(processStartTime(child.pid!)).toBeUndefined();
  });
});

describe("an evicted task's result file", () => {
  test('is removed when there is one, a symlink planted there too, and nothing is thrown when there is none', () => {
    const dataDir = tempDir();
    const dir = path.join(dataDir, RESULTS_DIR);
    mkdirSync(dir, { recursive: true });
    const warnings: string[] = [];
    const store = new ResultStore(dataDir, (message) => warnings.push(message));
    writeFileSync(path.join(dir, 'task-a.json'), '{}');
    symlinkSync(path.join(dataDir, 'nowhere'), path.join(dir, 'task-b.json'));
    store.remove('task-a');
    store.remove('task-b');
    store.remove('task-c');
    expect(existsSync(path.join(dir, 'task-a.json'))).toBe(false);
    expect(lstatSync(path.join(dir, 'task-b.json'), { throwIfNoEntry: false })).toBeUndefined();
    expect(warnings).toEqual([]);
  });
});

describe('the history limit at each ending', () => {
  test('finished tasks leave as others end, never one still running or queued, with many queued', async () => {
    const { broker } = createTestBroker({ concurrency: 2, historyLimit: 3, dataDir: path.join(tempDir(), 'data') });
    const exited = new Set<string>();
    const removed: string[] = [];
    const removedEarly: string[] = [];
    broker.on('update', (update: { kind: string; taskId: string }) => {
      if (update.kind === 'exited') exited.add(update.taskId);
    });
    broker.on('removed', (ids: string[]) => {
      for (const id of ids) if (!exited.has(id)) removedEarly.push(id);
      removed.push(...ids);
    });
    const tasks = Array.from({ length: 12 }, (_, n) => broker.submit({ command: fixture('quick.mjs'), input: { n } }));
    await Promise.all(tasks.map((task) => task.result));
    await broker.onIdle();
    const kept = broker.tasks().map((t) => t.id);
    expect(kept).toHaveLength(3);
    expect(removedEarly).toEqual([]);
    expect(new Set([...removed, ...kept])).toEqual(new Set(tasks.map((t) => t.id)));
    await broker.close();
  });
});
