/**
 * Fault table, issue 22 item 7b: the broker (hub) is SIGKILLed while an SDK agent works. The agent's
 * stdout and stderr are pipes of the dead broker, so its next progress line, heartbeat or log line
 * fails with EPIPE: that must cost a channel, never the agent. It finishes, spools its result, exits
 * 0, and the next broker over the same data directory adopts the result.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BrokerHost } from '../helpers/broker-host.js';
import { fixture, leftovers, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { agentProcesses } from '../helpers/reliability.js';

function journalHas(dataDir: string, event: string, id: string): boolean {
  try {
    return readFileSync(path.join(dataDir, 'journal.ndjson'), 'utf8')
      .split('\n')
      .some((line) => line.includes(`"e":"${event}"`) && line.includes(id));
  } catch {
    return false;
  }
}

describe.skipIf(process.platform === 'win32')('an SDK agent whose broker is SIGKILLed', () => {
  test('keeps reporting through EPIPE on stdout and stderr (progress, heartbeats, logs), exits 0 and spools; the next broker adopts the result', async () => {
    const dir = tempDir();
    const ipcDir = path.join(dir, 'ipc');
    const dataDir = path.join(dir, 'data');
    const record = path.join(dir, 'agent-ended.json');
    const first = await BrokerHost.start({ ipcDir, dataDir });
    const id = await first.submit({
      command: fixture('recovery/reports-after-broker-died.mjs'),
      args: [record],
      // Heartbeats every 800 ms (a third of the watchdog), on top of progress every 20 ms: two in
      // the agent's 1.5 s after the broker died. (600 ms stalled an agent whose node took that
      // long to start on a loaded machine: the watchdog runs from the spawn.)
      heartbeatTimeoutMs: 2400,
    });
    await waitFor(() => journalHas(dataDir, 'progress', id), 'the progress record in the journal');
    const agents = agentProcesses(ipcDir);
    expect(agents).toHaveLength(1);

    await first.kill();
    await waitUntilGone(agents, 20_000);
    // Written by the agent's own 'exit' handler: its stderr went with the broker.
    const ended = JSON.parse(readFileSync(record, 'utf8')) as { code: number; errors: string[] };
    expect(ended).toEqual({ code: 0, errors: [] });
    const spoolFile = path.join(ipcDir, `${id}.json`);
    expect(existsSync(spoolFile)).toBe(true);
    const spooled = JSON.parse(readFileSync(spoolFile, 'utf8'));
    expect(spooled).toMatchObject({ task_id: id, status: 'success', data: { answer: 42 } });
    expect(spooled.data.stepsAfterTheBrokerDied).toBeGreaterThan(10);

    const second = await BrokerHost.start({ ipcDir, dataDir });
    expect(await second.get(id)).toMatchObject({
      state: 'succeeded',
      result: { status: 'success', data: { answer: 42 }, meta: { channel: 'spool' } },
    });
    await second.close();
    expect(leftovers(ipcDir)).toEqual([]);
  }, 60_000);
});
