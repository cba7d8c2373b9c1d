/**
 * How a fleet's Redis clients close.
 *
 * Closed while their connections still start (a Redis that hangs after the handshake), they close
 * without an unhandled rejection. BullMQ 5's connection reported its start-up's failure as an
 * 'error' event after close() had removed every listener, and EventEmitter threw it: "Connection is
 * closed." as an unhandled rejection, which ends a hub or worker on its way out with a stack trace
 * (`serve --redis` stopped with Ctrl+C exited 1). It failed CI's run of fire-claims.test.ts, every
 * test of which had passed.
 *
 * A worker that stops leaves the fleet (it used to stay listed until the hub forgot it).
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { FleetWorker, redisFireClaims, redisQueue } from '../../src/fleet/index.js';
import { scratchDir, startServe } from '../e2e/serve.js';
import { tempDir, waitFor } from '../helpers/core.js';
import { REDIS_MISSING, startHungRedis, startRedis, type HungRedis } from '../helpers/redis.js';

describe('closing a fleet client whose Redis has not answered yet', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  let server: HungRedis;
  beforeEach(async () => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
    server = await startHungRedis();
  });
  afterEach(async () => {
    await server.close();
    process.off('unhandledRejection', onUnhandled);
  });

  /**
   * Waits for `connections` handshakes (each connection then waits on BullMQ's version check),
   * closes, waits for the cut connections to close, and gives their rejections time to surface.
   */
  async function closeWhileStarting(connections: number, close: () => Promise<void>): Promise<void> {
    await waitFor(() => server.handshakes >= connections, `${connections} handshakes`);
    await close();
    await waitFor(() => server.open === 0, 'the connections to close');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled.map(String)).toEqual([]);
  }

  test('fire claims: a claim waiting on the connection is refused, and nothing rejects unhandled', async () => {
    const claims = redisFireClaims({ redis: server.url, name: 'q', hub: 'h' });
    const waiting = claims.claim('s', [{ at: 1, through: 1 }], 60_000);
    const refused = expect(waiting).rejects.toThrow('the fire claims were closed');
    await closeWhileStarting(1, () => claims.close());
    await refused;
  });

  test('a broker’s Redis queue', async () => {
    const queue = redisQueue({ redis: server.url, name: 'q' });
    await closeWhileStarting(1, () => queue.close());
  });

  test('a fleet worker that never started', async () => {
    const worker = new FleetWorker({ redis: server.url, name: 'q', ipcDir: path.join(tempDir('bc-hung-'), 'ipc') });
    // Its own connection and its blocking one.
    await closeWhileStarting(2, () => worker.close(true));
  });
});

test('`serve --redis` on a Redis that hangs stops on Ctrl+C with exit 0, and prints no stack trace', async () => {
  const hung = await startHungRedis();
  try {
    const serve = await startServe(path.join(scratchDir(), 'data'), ['--redis', hung.url]);
    let stderr = '';
    serve.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Its queue and its fire claims have connected, and wait on their version checks.
    await waitFor(() => hung.handshakes >= 2, "the hub's two connections");
    await serve.stop('SIGINT');
    expect(stderr).not.toContain('Connection is closed');
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(serve.child.exitCode).toBe(0);
  } finally {
    await hung.close();
  }
}, 90_000);

test.skipIf(Boolean(REDIS_MISSING))(
  `a worker that stops leaves the fleet: the hub's list no longer names it${REDIS_MISSING ? ` (skipped: ${REDIS_MISSING})` : ''}`,
  async () => {
    const redis = await startRedis();
    const queue = redisQueue({ redis: redis.url, name: 'leaving' });
    try {
      const ipcDir = path.join(tempDir('bc-leave-'), 'ipc');
      const staying = new FleetWorker({ redis: redis.url, name: 'leaving', workerName: 'w-staying', ipcDir });
      const leaving = new FleetWorker({ redis: redis.url, name: 'leaving', workerName: 'w-leaving', ipcDir });
      await staying.start();
      await leaving.start();
      expect((await queue.fleet()).map((w) => w.name)).toEqual(['w-leaving', 'w-staying']);
      await leaving.close();
      expect((await queue.fleet()).map((w) => w.name)).toEqual(['w-staying']);
      await staying.close();
      expect(await queue.fleet()).toEqual([]);
    } finally {
      await queue.close();
      await redis.stop();
    }
  },
  60_000,
);
