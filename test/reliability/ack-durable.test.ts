/**
 * The broker acknowledges a final payload only once its `ended` record is on disk: an agent that
 * hears "received" exits without spooling, so an ack sent before the fsync, followed by a hub crash,
 * lost the result (issue 47, durable before reported). The journal's fsync is held here, so the
 * order is observed, not raced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test, vi } from 'vitest';
import { createTestBroker, fixture, tempDir, waitFor } from '../helpers/core.js';
import { holdFsyncs } from '../helpers/reliability.js';

afterEach(() => vi.restoreAllMocks());

test('a final payload is acknowledged once its ended record is durable, not at receipt', async () => {
  const dir = tempDir('bc-ackd-');
  const go = path.join(dir, 'go');
  const mark = path.join(dir, 'acked');
  // The real cancel grace: an agent has 3 s after its final to exit, the ack's wait included.
  const { broker } = createTestBroker({ dataDir: path.join(dir, 'data') }, { shortGrace: false });
  const task = broker.submit({ command: fixture('acked-marker.mjs'), env: { ACK_GO: go, ACK_MARK: mark } });
  await waitFor(() => task.snapshot().state === 'running', 'the agent to run');

  // From here every fsync waits for `release`: the next one the broker asks for is the ending's.
  const { release, held } = holdFsyncs();
  fs.writeFileSync(go, '');
  await waitFor(() => held() > 0, 'the broker to wait for the ending’s fsync');
  // The agent has its answer in well under a second once acked: it must not have one yet.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const early = { acked: fs.existsSync(mark), state: task.snapshot().state };
  release();
  // Not acked, and not shown as ended either, before the ending is durable.
  expect(early).toEqual({ acked: false, state: 'running' });
  expect(await task.result).toMatchObject({ status: 'success', data: { answer: 42 } });
  await waitFor(() => fs.existsSync(mark), 'the ack once the ending is durable');
  await task.finished;
});
