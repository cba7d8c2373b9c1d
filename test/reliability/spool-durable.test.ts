/**
 * A spool file is removed only once what was taken from it is durable: the broker that adopts an
 * agent's spooled result (while it lives, or after a restart) keeps the file until the `ended`
 * record is fsynced, so a hub killed in between finds it again (issue 47; the kill-point test found a
 * long task whose agent succeeded reading `interrupted` after a kill there). The journal's fsync is
 * held in each test, so the order is observed, not raced.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test, vi } from 'vitest';
import { BrokerHost } from '../helpers/broker-host.js';
import { createTestBroker, fixture, isAlive, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { agentProcesses } from '../helpers/processes.js';
import { holdFsyncs } from '../helpers/reliability.js';

afterEach(() => vi.restoreAllMocks());

test('a result taken from the spool as its agent exits: the file stays until the ending is durable', async () => {
  const dir = tempDir('bc-spd-');
  const { broker, ipcDir } = createTestBroker({ dataDir: path.join(dir, 'data') });
  let hold: ReturnType<typeof holdFsyncs> | undefined;
  const task = broker.submit({ command: fixture('recovery/spools-anyway.mjs'), args: ['only-spool'] });
  task.on('update', (update) => {
    if (update.kind === 'started') hold ??= holdFsyncs();
  });
  const spool = path.join(ipcDir, `${task.id}.json`);
  await waitFor(() => hold && hold.held() > 0, 'the broker to wait for the ending’s fsync');
  const pid = task.snapshot().pid!;
  await waitUntilGone([pid]);
  // Past the drain (300 ms here) the attempt has cleaned up: the taken spool file is still there.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const early = { spooled: existsSync(spool), state: task.snapshot().state };
  hold!.release();
  expect(early).toEqual({ spooled: true, state: 'running' });
  expect(await task.result).toMatchObject({ data: { via: 'only-spool' }, meta: { channel: 'spool' } });
  await task.finished;
  await waitFor(() => !existsSync(spool), 'the spool file to go once the ending is durable');
});

test('a spooled result adopted by a restarted broker: the file stays until its ended record is durable', async () => {
  const dir = tempDir('bc-spd-');
  const ipcDir = path.join(dir, 'ipc');
  const dataDir = path.join(dir, 'data');
  const first = await BrokerHost.start({ ipcDir, dataDir });
  const id = await first.submit({ command: fixture('recovery/outlives-broker.mjs') });
  // Its progress is in the journal: the agent got its input and works until its broker is gone.
  const journal = path.join(dataDir, 'journal.ndjson');
  await waitFor(() => existsSync(journal) && readFileSync(journal, 'utf8').includes('"e":"progress"'), 'the agent’s progress');
  const agents = agentProcesses(ipcDir);
  await first.kill();
  const spool = path.join(ipcDir, `${id}.json`);
  await waitFor(() => existsSync(spool), 'the spool file');
  await waitUntilGone(agents, 15_000);

  const hold = holdFsyncs();
  const { broker } = createTestBroker({ dataDir, ipcDir });
  await waitFor(() => broker.get(id)?.state === 'succeeded', 'the spooled result to be adopted');
  const early = existsSync(spool);
  hold.release();
  expect(early).toBe(true);
  await broker.ready;
  await waitFor(() => !existsSync(spool), 'the spool file to go once the adoption is durable');
  expect(agents.filter(isAlive)).toEqual([]);
});
