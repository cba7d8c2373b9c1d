/**
 * One history home (issue 25 item 7): the desktop app keeps its history where every headless
 * command reads it, `$XDG_STATE_HOME/backchannel`; an earlier app's history in Electron's
 * `userData` is moved there once. The Electron shell only calls ../../src/hub/history-home.ts, so
 * this runs what the app runs at start under plain Node, with a real broker's history and the real
 * `backchannel tasks` and `stats` reading it afterwards.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { createTestBroker, fixture, tempDir } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { cli } from './control/hub-process.js';
import { defaultDataDir } from '../../src/paths/data-dir.js';
import { desktopHistory, moveLegacyHistory, MOVED_NOTE } from '../../src/hub/history-home.js';

/** What an earlier app left: its broker ran one real task with history in `<userData>/state`. */
async function earlierAppHistory(userData: string, label: string): Promise<string> {
  const legacy = path.join(userData, 'state');
  const { broker, close } = createTestBroker({ dataDir: legacy });
  await broker.ready;
  const { snapshot } = await runTask(broker, { command: process.execPath, args: [fixture('quick.mjs')], label });
  expect(snapshot.state).toBe('succeeded');
  await close();
  return snapshot.id;
}

function headless(dir: string): NodeJS.ProcessEnv {
  const env = { ...process.env, XDG_STATE_HOME: path.join(dir, 'xdg-state'), XDG_RUNTIME_DIR: '', CURSOR_IPC_DIR: path.join(dir, 'ipc') };
  delete env.BACKCHANNEL_CONTROL;
  delete env.BACKCHANNEL_USER_DATA;
  return env;
}

describe('one history home for the desktop app and the headless commands', () => {
  test("the app's history is the headless one; only a test's own user data keeps it inside", () => {
    const env = { XDG_STATE_HOME: '/home/u/.local/state' };
    expect(desktopHistory('/home/u/.config/Backchannel', env)).toEqual({
      dataDir: '/home/u/.local/state/backchannel',
      legacy: '/home/u/.config/Backchannel/state',
    });
    expect(desktopHistory('/tmp/app', { ...env, BACKCHANNEL_USER_DATA: '/tmp/app' })).toEqual({ dataDir: '/tmp/app/state' });
  });

  test("an earlier app's history moves to the home once; tasks and stats with no --data-dir then show it", async () => {
    const dir = tempDir('bc-home-');
    const env = headless(dir);
    const userData = path.join(dir, 'config', 'Backchannel');
    const id = await earlierAppHistory(userData, 'from the app');
    const home = desktopHistory(userData, env);

    const before = await cli(['tasks', '--json'], env);
    expect(JSON.parse(before.stdout || '[]')).toEqual([]);

    const moved = await moveLegacyHistory(home.legacy!, home.dataDir);
    expect(moved).toMatchObject({ kind: 'moved', from: home.legacy, to: defaultDataDir(env) });
    expect(moved.kind === 'moved' && moved.notice).toContain(defaultDataDir(env));
    // The old directory keeps only the note saying where the history went.
    expect(readdirSync(home.legacy!).filter((name) => name !== 'broker.lock')).toEqual([MOVED_NOTE]);
    expect(readFileSync(path.join(home.legacy!, MOVED_NOTE), 'utf8')).toContain(home.dataDir);
    expect((lstatSync(home.dataDir).mode & 0o777).toString(8)).toBe('700');

    const tasks = await cli(['tasks', '--json'], env);
    expect(tasks.stderr).toBe('');
    expect((JSON.parse(tasks.stdout) as Array<{ id: string; label: string }>).map((t) => [t.id, t.label])).toEqual([[id, 'from the app']]);
    const stats = await cli(['stats'], env);
    expect(stats.stdout).toMatch(/\nquick\.mjs\s+1\s+100\.0/);

    // Once: the next start finds nothing to move, and the home is not touched.
    const journal = readFileSync(path.join(home.dataDir, 'journal.ndjson'));
    expect(await moveLegacyHistory(home.legacy!, home.dataDir)).toEqual({ kind: 'none' });
    expect(readFileSync(path.join(home.dataDir, 'journal.ndjson')).equals(journal)).toBe(true);
  });

  test('when the home has history of its own, nothing is merged: the earlier one stays, and the notice (given once) says how to read it', async () => {
    const dir = tempDir('bc-home-');
    const env = headless(dir);
    const userData = path.join(dir, 'config', 'Backchannel');
    const earlier = await earlierAppHistory(userData, 'from the app');
    const home = desktopHistory(userData, env);
    const headlessTask = await earlierAppHistory(path.join(dir, 'other'), 'headless');
    mkdirSync(path.dirname(home.dataDir), { recursive: true });
    const journal = readFileSync(path.join(dir, 'other', 'state', 'journal.ndjson'));
    mkdirSync(home.dataDir, { mode: 0o700 });
    writeFileSync(path.join(home.dataDir, 'journal.ndjson'), journal, { mode: 0o600 });
    const legacyJournal = readFileSync(path.join(home.legacy!, 'journal.ndjson'));

    const kept = await moveLegacyHistory(home.legacy!, home.dataDir);
    expect(kept.kind).toBe('kept');
    expect(kept.kind === 'kept' && kept.notice).toContain(`backchannel stats --data-dir ${home.legacy}`);
    expect(readFileSync(path.join(home.legacy!, 'journal.ndjson')).equals(legacyJournal)).toBe(true);
    expect(readFileSync(path.join(home.dataDir, 'journal.ndjson')).equals(journal)).toBe(true);
    expect(await moveLegacyHistory(home.legacy!, home.dataDir)).toEqual({ kind: 'none' });

    // Both stay readable, each where the notice says.
    const tasks = await cli(['tasks', '--json'], env);
    expect((JSON.parse(tasks.stdout) as Array<{ id: string }>).map((t) => t.id)).toEqual([headlessTask]);
    const stats = await cli(['stats', '--json', '--data-dir', home.legacy!], env);
    expect(stats.stderr).toBe('');
    expect((JSON.parse(stats.stdout) as { total: { count: number } }).total.count).toBe(1);
    expect(earlier).not.toBe(headlessTask);
  });

  test('a symlink planted in the old directory is neither followed nor moved, and an earlier app still running there is left alone', async () => {
    const dir = tempDir('bc-home-');
    const env = headless(dir);
    const userData = path.join(dir, 'config', 'Backchannel');
    await earlierAppHistory(userData, 'from the app');
    const home = desktopHistory(userData, env);
    const secret = path.join(dir, 'secret.txt');
    writeFileSync(secret, 'not history');
    symlinkSync(secret, path.join(home.legacy!, 'planted'));

    // A broker (an earlier app) still runs on the old directory: nothing moves.
    const running = createTestBroker({ dataDir: home.legacy! });
    await running.broker.ready;
    expect(await moveLegacyHistory(home.legacy!, home.dataDir)).toEqual({ kind: 'none' });
    expect(existsSync(path.join(home.legacy!, 'journal.ndjson'))).toBe(true);
    await running.broker.close();

    expect((await moveLegacyHistory(home.legacy!, home.dataDir)).kind).toBe('moved');
    expect(existsSync(path.join(home.dataDir, 'planted'))).toBe(false);
    expect(lstatSync(path.join(home.legacy!, 'planted')).isSymbolicLink()).toBe(true);
    expect(readFileSync(secret, 'utf8')).toBe('not history');
  });

  test('an old directory another user could write is refused with one line, and nothing moves', async () => {
    const dir = tempDir('bc-home-');
    const userData = path.join(dir, 'config', 'Backchannel');
    const legacy = path.join(userData, 'state');
    mkdirSync(legacy, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(legacy, 'journal.ndjson'), '{"e":"queued"}\n');
    const { chmodSync } = await import('node:fs');
    chmodSync(legacy, 0o777);
    const home = path.join(dir, 'home');
    await expect(moveLegacyHistory(legacy, home)).rejects.toThrow(/writable by everyone/);
    expect(existsSync(home)).toBe(false);
  });
});
