/**
 * Fault table, issue 12 item 16: agents of a SIGKILLed broker are stopped by the restarted broker,
 * but only processes whose pid *and* start time match the journal (pids are reused).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BrokerHost } from '../helpers/broker-host.js';
import { fixture, isAlive, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { agentProcesses } from '../helpers/reliability.js';

describe('agents that outlive a killed broker', () => {
  test.skipIf(process.platform !== 'linux')(
    'the restarted broker stops the agents recorded with a matching start time, and leaves a process that reuses a recorded pid alone',
    async () => {
      const dir = tempDir();
      const ipcDir = path.join(dir, 'ipc');
      const dataDir = path.join(dir, 'data');
      const first = await BrokerHost.start({ ipcDir, dataDir });
      // Waits for a release file that never comes: without the fix it runs forever.
      const id = await first.submit({ command: fixture('recovery/finishes-later.mjs'), args: [path.join(dir, 'never')] });
      const journal = path.join(dataDir, 'journal.ndjson');
      await waitFor(() => readFileSync(journal, 'utf8').includes('"e":"progress"'), 'the progress record');
      const agents = agentProcesses(ipcDir);
      expect(agents.length).toBeGreaterThan(0);
      await first.kill();

      // An unrelated process, recorded in the journal under a start time that is not its own: a reused pid.
      const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
      const at = new Date().toISOString();
      appendFileSync(
        journal,
        JSON.stringify({ e: 'queued', id: 'reused', at, spec: { command: 'x', args: [], cwd: '/', label: 'x' }, maxAttempts: 1 }) + '\n',
      );
      appendFileSync(journal, JSON.stringify({ e: 'attempt', id: 'reused', at, attempt: 1, pid: bystander.pid, pidStart: '1' }) + '\n');
      try {
        const second = await BrokerHost.start({ ipcDir, dataDir, orphanGraceMs: 0 });
        await waitUntilGone(agents, 10_000);
        // Recovering until its agent was gone, then ended once, saying why (issue 47, Y55).
        const ended = await waitFor(async () => {
          const task = await second.get(id);
          return task?.state !== 'running' && task;
        }, "the stopped agent's task to end");
        expect(ended).toMatchObject({
          state: 'failed',
          reason: 'crashed',
          message: "stopped by the hub: its agent outlived the hub's restart by 0 ms",
        });
        expect(isAlive(bystander.pid!)).toBe(true);
        await second.close();
      } finally {
        bystander.kill('SIGKILL');
        // Without the fix the agent waits forever: do not leave it behind.
        for (const pid of agents.filter(isAlive)) process.kill(pid, 'SIGKILL');
      }
    },
  );
});
