/**
 * Fault table, issue 36 item 3: what the task endpoints refuse or fail to accept is counted — in the
 * attempt's failure message, in the broker's `stats()`, the bridge's `info` and the gateway's
 * `/health` — so a lost result can be told apart from a connection that never got in.
 *
 * Accept errors are counted where Node reports them (the server's `error`). Out of descriptors,
 * libuv does not report them: it accepts and closes the waiting connections itself (its "EMFILE
 * trick"), so such a connection is lost silently (docs/reliability.md, "What the broker tallies").
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { createInMemoryPair } from '../../src/client/index.js';
import { runTask } from '../helpers/broker.js';
import { fixture, makeBroker } from '../helpers/core.js';

const round2 = (name: string) => fixture(path.join('round2', name));

describe.skipIf(process.platform === 'win32')('the connection tally', () => {
  test('a refused connection is counted in stats() and the bridge’s info, and named in the failure', async () => {
    const { broker } = makeBroker();
    const before = broker.stats().connections!.refused;
    const wrong = await runTask(broker, { command: process.execPath, args: [round2('design-template.mjs'), 'wrong'] });
    expect(wrong.error?.message).toMatch(/1 connection rejected: wrong token/);
    expect(broker.stats().connections!.refused).toBe(before + 1);
    const { client } = createInMemoryPair(broker);
    expect((await client.info()).connections).toMatchObject({ refused: before + 1, acceptErrors: 0 });
  });
});
