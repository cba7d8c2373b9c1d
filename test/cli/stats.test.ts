/**
 * `backchannel stats` goes through the client, as every command: `openClient`'s history mode names
 * its data directory first (`dataDir`): the hub that holds that directory, else its history on disk —
 * never the hub of another directory — and `readHeld` reads a history whose broker this process cannot
 * reach (the other task commands are refused there: its running tasks would read as interrupted).
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { openClient } from '../../src/client/index.js';
import { createTestBroker, fixture, tempDir } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

/** A data directory a broker in this process holds (no hub, no control endpoint), with one finished task. */
async function heldHistory(): Promise<{ dataDir: string; close: () => Promise<void> }> {
  const dataDir = tempDir('bc-stats-');
  const { broker, close } = createTestBroker({ dataDir });
  await broker.submit({ command: fixture('quick.mjs') }).result;
  return { dataDir, close };
}

describe('stats through the client', () => {
  test('a history held by a broker this process cannot reach: refused to the task commands, read for the figures', async () => {
    const { dataDir, close } = await heldHistory();
    const env = { ...process.env, XDG_STATE_HOME: tempDir('bc-state-'), BACKCHANNEL_CONTROL: '' };
    try {
      await expect(openClient({ withoutHub: 'history', dataDir, env })).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining(`belongs to a running Backchannel broker (pid ${process.pid})`) as unknown,
      });
      const client = await openClient({ withoutHub: 'history', dataDir, readHeld: true, env });
      expect(client.where).toEqual({ kind: 'history', dataDir });
      expect((await client.insights({})).total.count).toBe(1);
      await client.close();

      const stats = await cli(['stats', '--json', '--data-dir', dataDir], env);
      expect(stats.stderr).toBe('');
      expect(stats.code).toBe(0);
      expect((JSON.parse(stats.stdout) as { total: { count: number }; schedules: unknown[] }).total.count).toBe(1);
    } finally {
      await close();
    }
  });

  test("the named directory's hub answers for it; another directory is read from disk, not from the hub the environment names", async () => {
    const hub = hubEnv();
    const served = await startHub(hub);
    const hubData = path.join(hub.dir, 'data');
    const ran = await cli(['run', '--json', fixture('quick.mjs')], hub.env);
    expect(ran.code).toBe(0);

    const onHub = await openClient({ withoutHub: 'history', dataDir: hubData, env: hub.env });
    expect(onHub.where).toEqual({ kind: 'hub', path: hub.socket });
    expect((await onHub.insights({})).total.count).toBe(1);
    await onHub.close();

    // BACKCHANNEL_CONTROL names the running hub, but this directory is not its: its own history answers.
    const other = tempDir('bc-other-');
    const elsewhere = await openClient({ withoutHub: 'history', dataDir: other, env: hub.env });
    expect(elsewhere.where).toEqual({ kind: 'history', dataDir: other });
    expect((await elsewhere.insights({})).total.count).toBe(0);
    await elsewhere.close();

    const stats = await cli(['stats', '--json', '--data-dir', hubData], hub.env);
    expect(stats.stderr).toBe('');
    expect((JSON.parse(stats.stdout) as { total: { count: number } }).total.count).toBe(1);
    served.child.kill('SIGINT');
    expect(await served.exited).toBe(0);
  });

  test('`dataDir` and `readHeld` belong to the history mode', async () => {
    await expect(openClient({ withoutHub: 'private', dataDir: '/tmp' })).rejects.toThrow(
      '`dataDir` and `readHeld` go with `withoutHub: "history"`',
    );
    await expect(openClient({ withoutHub: 'refuse', readHeld: true })).rejects.toThrow(TypeError);
  });
});
