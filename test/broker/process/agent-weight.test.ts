/**
 * The agents' weight on the CPU (src/broker/process/agent-weight.ts): the nice for a number of
 * running agents, and what the spawner thread makes of it with real processes — each agent's
 * session (autogroup) re-weighed as agents start and exit, the agent's own nice when it shares
 * the hub's session, and a template's CLI in a session of its own given its agent's weight
 * (templates/_shared/cli-process.mjs).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { agentNice, AGENT_NICE_TABLE, MAX_NICE, NICE_WEIGHTS } from '../../../src/broker/process/agent-weight.js';
import { Spawner, type AgentProcess } from '../../../src/broker/process/spawner.js';
import { TaskBroker } from '../../../src/broker/broker.js';
import { fixture, waitFor } from '../../helpers/core.js';
import { scratchDir, startServe } from '../../e2e/serve.js';

const AUTOGROUP_MISSING = autogroupMissing();
const CLI_PROCESS = pathToFileURL(path.resolve('templates/_shared/cli-process.mjs')).href;

function autogroupMissing(): string | undefined {
  try {
    if (readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() !== '1') return 'autogroup is off in this kernel';
    return undefined;
  } catch {
    return 'this kernel has no autogroup (/proc/sys/kernel/sched_autogroup_enabled)';
  }
}

/** One of three session-nice agents meeting in `dir`: each returns its session's nice once all three run. */
function meetingOfThree(dir: string): { command: string; input: { dir: string; n: number } } {
  return { command: fixture('session-nice.mjs'), input: { dir, n: 3 } };
}

describe('agentNice', () => {
  it('leaves a lone agent at nice 0 and makes many together weigh at most one session', () => {
    expect(agentNice(0)).toBe(0);
    expect(agentNice(1)).toBe(0);
    expect(agentNice(2)).toBe(4); // 2 × 423 ≤ 1024 < 2 × 526
    expect(agentNice(50)).toBe(18); // 50 × 18 ≤ 1024 < 50 × 23
    expect(agentNice(10_000)).toBe(MAX_NICE);
    for (let running = 1; running < AGENT_NICE_TABLE.length; running++) {
      const nice = agentNice(running);
      expect(AGENT_NICE_TABLE[running]).toBe(nice);
      expect(running * NICE_WEIGHTS[nice]!).toBeLessThanOrEqual(1024);
      // The lowest such nice: one less would weigh more than a session.
      if (nice > 0) expect(running * NICE_WEIGHTS[nice - 1]!).toBeGreaterThan(1024);
    }
    // Past the table even nice 19 weighs more than a session together; the thread uses 19 there.
    expect(AGENT_NICE_TABLE.length * NICE_WEIGHTS[MAX_NICE]).toBeGreaterThan(1024);
  });
});

describe.skipIf(AUTOGROUP_MISSING)(
  `the spawner thread weighs its agents${AUTOGROUP_MISSING ? ` (skipped: ${AUTOGROUP_MISSING})` : ''}`,
  () => {
    let spawner: Spawner | undefined;
    const groups: number[] = [];

    afterEach(async () => {
      for (const pid of groups.splice(0)) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      await spawner?.stop();
    });

    function sleeper(detached = true): Promise<{ child: AgentProcess; pid: number; exited: Promise<unknown> }> {
      const child = spawner!.spawn({ file: '/bin/sleep', args: ['60'], cwd: '/', env: { PATH: '/usr/bin:/bin' }, detached });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      return new Promise((resolve, reject) => {
        child.once('error', reject);
        child.once('spawn', () => {
          if (detached) groups.push(child.pid!);
          resolve({ child, pid: child.pid!, exited });
        });
      });
    }

    /** The nice of the session (autogroup) `pid` leads: "/autogroup-123 nice 5". */
    function sessionNice(pid: number): number {
      const match = /nice (-?\d+)/.exec(readFileSync(`/proc/${pid}/autogroup`, 'utf8'));
      if (!match) throw new Error(`unexpected /proc/${pid}/autogroup`);
      return Number(match[1]);
    }

    it("sets each agent's session nice for the number running, and back as they exit", async () => {
      spawner = new Spawner();
      const first = await sleeper();
      expect(sessionNice(first.pid)).toBe(0);

      const more = [];
      for (let i = 0; i < 9; i++) more.push(await sleeper());
      // The thread re-weighs before it reports the spawn: with 10 running, each session is at agentNice(10).
      expect(agentNice(10)).toBe(11);
      expect([first, ...more].map((agent) => sessionNice(agent.pid))).toEqual(Array(10).fill(11));

      for (const agent of more) process.kill(-agent.pid, 'SIGKILL');
      await Promise.all(more.map((agent) => agent.exited));
      // …and before it reports an exit: alone again, the first is back at nice 0.
      expect(sessionNice(first.pid)).toBe(0);
    });

    it("gives a template's CLI in a session of its own its agent's weight", async () => {
      spawner = new Spawner();
      const dir = mkdtempSync(path.join(tmpdir(), 'bc-weight-'));
      try {
        const agent = path.join(dir, 'agent.mjs');
        writeFileSync(
          agent,
          `import { startCli } from ${JSON.stringify(CLI_PROCESS)};
const cli = startCli({ bin: '/bin/sleep', args: ['60'], onStdoutLine() {} });
process.stdout.write(JSON.stringify({ cli: cli.pid }) + '\\n');
await cli.done;
`,
        );
        await sleeper();
        await sleeper();
        const child = spawner.spawn({ file: process.execPath, args: [agent], cwd: dir, env: { PATH: '/usr/bin:/bin' }, detached: true });
        const line = new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
          });
          child.once('error', reject);
        });
        const pid = await new Promise<number>((resolve) => child.once('spawn', () => resolve(child.pid!)));
        groups.push(pid);
        const { cli } = JSON.parse(await line) as { cli: number };
        groups.push(cli);
        // Three running: the agent's session is at agentNice(3), and its CLI leads a session of its own at the same.
        expect(agentNice(3)).toBe(5);
        expect(sessionNice(pid)).toBe(5);
        expect(readFileSync(`/proc/${cli}/autogroup`, 'utf8')).not.toBe(readFileSync(`/proc/${pid}/autogroup`, 'utf8'));
        expect(sessionNice(cli)).toBe(5);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("leaves an agent spawned with cpu: 'full' out of the weighing", async () => {
      spawner = new Spawner();
      const full = spawner.spawn({
        file: '/bin/sleep',
        args: ['60'],
        cwd: '/',
        env: { PATH: '/usr/bin:/bin' },
        detached: true,
        cpu: 'full',
      });
      const fullPid = await new Promise<number>((resolve, reject) => {
        full.once('error', reject);
        full.once('spawn', () => resolve(full.pid!));
      });
      groups.push(fullPid);
      const shared = [];
      for (let i = 0; i < 3; i++) shared.push(await sleeper());
      // Three counted, not four; the full one keeps a whole session's weight.
      expect(shared.map((agent) => sessionNice(agent.pid))).toEqual(Array(3).fill(agentNice(3)));
      expect(sessionNice(fullPid)).toBe(0);
    });

    it('weighs a broker\'s agents unless the broker says `agentCpu: "full"`', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'bc-weight-broker-'));
      try {
        for (const [agentCpu, nice] of [
          [undefined, agentNice(3)],
          ['full', 0],
        ] as const) {
          const broker = new TaskBroker({ ipcDir: path.join(dir, 'ipc'), concurrency: 3, ...(agentCpu ? { agentCpu } : {}) });
          try {
            const meeting = mkdtempSync(path.join(dir, 'meet-'));
            const tasks = Array.from({ length: 3 }, () => broker.submit(meetingOfThree(meeting)));
            const results = await Promise.all(tasks.map((task) => task.result));
            expect(results.map((r) => (r.data as { nice: number }).nice)).toEqual([nice, nice, nice]);
          } finally {
            await broker.close();
          }
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 60_000);

    it("weighs a hub's agents unless `serve --agent-cpu full` or `serve: {agent_cpu: full}` says not to", async () => {
      const dir = scratchDir();
      const config = path.join(dir, 'config.yaml');
      writeFileSync(config, 'serve:\n  agent_cpu: full\nrun_policy:\n  allow:\n    - command: "*"\n');
      try {
        for (const [how, args, env, nice] of [
          ['by default', [], {}, agentNice(3)],
          ['--agent-cpu full', ['--agent-cpu', 'full'], {}, 0],
          ['agent_cpu: full in the config file', [], { BACKCHANNEL_CONFIG: config }, 0],
        ] as const) {
          const serve = await startServe(mkdtempSync(path.join(dir, 'data-')), ['--concurrency', '3', ...args], env);
          try {
            const meeting = mkdtempSync(path.join(dir, 'meet-'));
            const ids = await Promise.all(
              Array.from({ length: 3 }, async () => (await serve.api<{ id: string }>('POST', '/api/tasks', meetingOfThree(meeting))).id),
            );
            const nices = await Promise.all(
              ids.map((id) =>
                waitFor(async () => {
                  const { task } = await serve.api<{ task: { state: string; result?: { data?: { nice?: number } } } }>(
                    'GET',
                    `/api/tasks/${id}`,
                  );
                  if (task.state !== 'succeeded' && task.state !== 'running' && task.state !== 'queued')
                    throw new Error(`${how}: task ${id} ${task.state}`);
                  // An object: a nice of 0 is falsy, which waitFor would take for "not yet".
                  return task.state === 'succeeded' ? { nice: task.result?.data?.nice } : undefined;
                }, `the task to return its session's nice (${how})`),
              ),
            );
            expect({ how, nices: nices.map((n) => n.nice) }).toEqual({ how, nices: [nice, nice, nice] });
          } finally {
            await serve.stop();
          }
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);

    it("sets the agent's own nice when it shares the hub's session", async () => {
      spawner = new Spawner();
      for (let i = 0; i < 4; i++) await sleeper();
      // This test run's session; empty where it is the root autogroup (a process that never started
      // a session, as in some containers), whose weight the kernel does not let anyone change.
      const hubs = readFileSync(`/proc/${process.pid}/autogroup`, 'utf8');
      const shared = await sleeper(false);
      try {
        expect(getPriority(shared.pid)).toBe(agentNice(5));
        // Not its session's: that is the hub's own, left alone, also when the others are re-weighed.
        expect(readFileSync(`/proc/${shared.pid}/autogroup`, 'utf8')).toBe(hubs);
        const next = await sleeper();
        expect(sessionNice(next.pid)).toBe(agentNice(6));
        expect(readFileSync(`/proc/${process.pid}/autogroup`, 'utf8')).toBe(hubs);
      } finally {
        // Were it changed, this test's own session (the whole test run's) gets its weight back.
        const nice = /nice (-?\d+)/.exec(hubs)?.[1];
        if (nice !== undefined) writeFileSync(`/proc/${process.pid}/autogroup`, nice);
        shared.child.once('error', () => {});
        process.kill(shared.pid, 'SIGKILL');
        await shared.exited;
      }
    });
  },
);
