/**
 * Fault table, issue 22 item 5: one broker per data directory. A second broker on a history another
 * live process holds used to read that process's running tasks as interrupted, adopt their spool
 * files and stop their agents as orphans; now it fails at once with `data_dir_in_use`, naming the
 * directory and the holder's pid, and touches nothing. The lock dies with its process.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { lockDataDir, lockPathOf, readLockHolder } from '../../src/broker/history/data-dir-lock.js';
import { BrokerHost } from '../helpers/broker-host.js';
import { makeBroker, ROOT, settle, tempDir, waitFor } from '../helpers/core.js';

const TICKS = path.join(ROOT, 'test/cli/fixtures/ticks.mjs');

function dirs(): { dir: string; dataDir: string; ipcDir: string } {
  const dir = tempDir();
  return { dir, dataDir: path.join(dir, 'data'), ipcDir: path.join(dir, 'ipc') };
}

describe('one broker per data directory', () => {
  test("a second broker (another process) on a held data directory rejects ready with data_dir_in_use naming the directory and the holder's pid; the holder's running task is never interrupted nor killed, and succeeds", async () => {
    const { dataDir, ipcDir } = dirs();
    const holder = await BrokerHost.start({ dataDir, ipcDir });
    const id = await holder.submit({ command: TICKS, input: { ticks: 25 }, label: 'held' });
    await waitFor(async () => ((await holder.get(id))?.progress ?? 0) > 0, 'the task to run');
    const dataBefore = readdirSync(dataDir).sort();
    const ipcBefore = readdirSync(ipcDir).sort();

    const started = Date.now();
    // A short orphan grace: a second broker that took this history stopped the holder's agent at once.
    const { broker } = makeBroker({ dataDir, ipcDir, orphanGraceMs: 50, killGraceMs: 50 });
    const ready = await settle(broker.ready);
    expect(ready.ok).toBe(false);
    const error = (ready as { error: { code: string; name: string; message: string } }).error;
    expect(error).toMatchObject({ name: 'BrokerError', code: 'data_dir_in_use' });
    expect(error.message).toContain(dataDir);
    expect(error.message).toContain(`pid ${holder.pid}`);
    expect(error.message).not.toContain('\n');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(broker.tasks()).toEqual([]);
    await broker.close();

    expect(readdirSync(dataDir).sort()).toEqual(dataBefore);
    for (const name of ipcBefore) expect(readdirSync(ipcDir)).toContain(name);
    expect(await holder.result(id)).toMatchObject({ ok: true, payload: { status: 'success', data: { ticks: 25 } } });
    expect(await holder.get(id)).toMatchObject({ state: 'succeeded' });
    const journal = readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8');
    expect(journal).not.toContain('interrupted');
  });

  test('SIGKILL the holder: its lock is refused twice and taken over by the next broker, which reads the history; close releases the lock', async () => {
    const { dataDir, ipcDir } = dirs();
    const holder = await BrokerHost.start({ dataDir, ipcDir });
    const id = await holder.submit({ command: TICKS, input: { ticks: 1 } });
    expect((await holder.result(id)).ok).toBe(true);
    expect(await readLockHolder(dataDir)).toEqual({ pid: holder.pid });
    // The journal is written in batches: kill only once it holds the outcome (a loaded machine writes it later).
    await waitFor(
      () => readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8').includes(`"e":"ended","id":"${id}"`),
      'the outcome in the journal',
    );
    await holder.kill();
    // The kernel closed the socket with the process: the file is left, and refuses.
    expect(lstatSync(path.join(dataDir, 'broker.lock')).isSocket()).toBe(true);
    expect(await readLockHolder(dataDir)).toBeUndefined();

    const { broker } = makeBroker({ dataDir, ipcDir });
    await broker.ready;
    expect(broker.get(id)).toMatchObject({ state: 'succeeded' });
    expect(await readLockHolder(dataDir)).toEqual({ pid: process.pid });
    await broker.close();
    expect(readdirSync(dataDir)).not.toContain('broker.lock');
    const next = makeBroker({ dataDir, ipcDir }).broker;
    await next.ready;
    expect(next.get(id)).toMatchObject({ state: 'succeeded' });
  });

  test('two brokers in one process: the second is refused too; a data directory whose lock path passes the socket limit is locked in /tmp by its hash', async () => {
    const { dir, dataDir, ipcDir } = dirs();
    const first = makeBroker({ dataDir, ipcDir }).broker;
    await first.ready;
    const second = makeBroker({ dataDir, ipcDir }).broker;
    expect(await settle(second.ready)).toMatchObject({
      ok: false,
      error: { code: 'data_dir_in_use', message: expect.stringContaining('this process') },
    });

    const deep = path.join(dir, 'a-rather-long-directory-name-'.repeat(4), 'data');
    mkdirSync(deep, { recursive: true, mode: 0o700 });
    const where = lockPathOf(deep);
    expect(where.path).toMatch(/^\/tmp\/bc-locks-[^/]+\/[0-9a-f]{32}\.lock$/);
    const lock = await lockDataDir(deep);
    try {
      expect(await readLockHolder(deep)).toEqual({ pid: process.pid });
      const again = makeBroker({ dataDir: deep, ipcDir: path.join(dir, 'ipc2') }).broker;
      expect(await settle(again.ready)).toMatchObject({ ok: false, error: { code: 'data_dir_in_use' } });
    } finally {
      await lock.release();
    }
    expect(lstatSync(where.path, { throwIfNoEntry: false })).toBeUndefined();
  });
});
