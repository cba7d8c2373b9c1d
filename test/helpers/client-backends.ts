/**
 * The one client's three backends, each over a fresh real broker, for tests that run the same cases
 * in this process, over the in-memory pair, and on a real hub over its control endpoint. Call it at
 * a test file's top level: it registers the afterEach that closes what each backend opened.
 */
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { clientOf, createInMemoryPair, openClient, type BackchannelClient } from '../../src/client/index.js';
import { createTestBroker, tempDir } from './core.js';
import { startTestHeadless } from './panel.js';

export type ClientBackend = [name: string, open: () => Promise<BackchannelClient>];

export function clientBackends(tempPrefix: string): ClientBackend[] {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return [
    ['in process', async () => clientOf(createTestBroker().broker)],
    ['on the hub (in-memory pair)', async () => createInMemoryPair(createTestBroker().broker).client],
    [
      'on a real hub (control endpoint)',
      async () => {
        const dir = tempDir(tempPrefix);
        const control = path.join(dir, 'run', 'control.sock');
        const hub = await startTestHeadless({ dir, control });
        closers.push(() => hub.stop());
        const client = await openClient({ withoutHub: 'refuse', env: { ...process.env, BACKCHANNEL_CONTROL: control } });
        closers.push(() => client.close());
        expect(client.where.kind).toBe('hub');
        return client;
      },
    ],
  ];
}
