/**
 * The warm adapter (src/broker/acp/spare.ts, docs/acp.md): a broker keeps one spare ACP adapter
 * (dist/acp/main.js --spare) ready, and an ACP task's attempt takes it instead of starting one — real
 * processes throughout, with the fixture ACP agent (test/fixtures/acp/agent.mjs). The spare's pid is
 * the task's, the agent runs in its process group (a kill of the group ends both), the spare holds no
 * task’s secret before its hand-off, a cancel goes as session/cancel then the tree, it is replaced
 * after each task and after its own death, it is killed when the broker closes, and a bad hand-off
 * line is a one-line error.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AcpTasks } from '../../src/broker/acp/index.js';
import type { TaskBroker } from '../../src/broker/index.js';
import type { SpareProcess } from '../../src/broker/process/spawn-agent.js';
import type { TaskSpec } from '../../src/model/task.js';
import { createTestBroker, isAlive, ROOT, tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { startTask } from '../helpers/broker.js';

const ADAPTER = path.join(ROOT, 'dist/acp/main.js');
const AGENT = path.join(ROOT, 'test/fixtures/acp/agent.mjs');

/** A broker with the built adapter kept warm, and its ACP kind's spares. */
function warmBroker(options: { cancelGraceMs?: number } = {}) {
  const b = createTestBroker({ acp: { adapter: ADAPTER, warm: true }, ...options });
  // The kind is the broker's own (the second, after coding tasks): its spares are what these tests watch.
  const kind = (b.broker as unknown as { kinds: unknown[] }).kinds.find((k) => (k as AcpTasks).spares !== undefined) as AcpTasks;
  return { ...b, spares: kind.spares! };
}

function spec(cwd: string, input: string, env: Record<string, string> = {}): TaskSpec {
  return { command: AGENT, acp: true, input, cwd, env: { ACP_FIXTURE_STATE: cwd, ...env }, retries: 0 };
}

/** Runs `task` to its end; with the pid its agent had while it ran (the snapshot has none after the exit). */
async function run(broker: TaskBroker, task: TaskSpec) {
  let pid: number | undefined;
  const done = await startTask(broker, task, (_update, handle) => (pid ??= handle.snapshot().pid)).done;
  return { ...done, pid };
}

/** The spare once it has started (a pid); `not` skips the one a test already saw. */
async function readySpare(spares: { current: SpareProcess | undefined }, not?: number): Promise<SpareProcess> {
  return waitFor(() => {
    const spare = spares.current;
    return spare?.pid !== undefined && spare.pid !== not && !spare.gone ? spare : undefined;
  }, 'a spare adapter');
}

/** The process group of `pid` (Linux: /proc/<pid>/stat's fifth field). */
function groupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** The fixture agents started with state in `dir` (it writes agent-<pid>.pid there). */
function agentPids(dir: string): number[] {
  return readdirSync(dir)
    .filter((f) => /^agent-\d+\.pid$/.test(f))
    .map((f) => Number(f.slice('agent-'.length, -'.pid'.length)));
}

describe.skipIf(process.platform === 'win32')('the warm adapter', () => {
  it('runs a prompt through the spare: its pid is the task’s, the agent in its group, no secret before the hand-off', async () => {
    const { broker, spares } = warmBroker();
    const cwd = tempDir();
    const first = await run(broker, spec(cwd, 'one'));
    expect(first.payload?.data).toMatchObject({ stop_reason: 'end_turn' });
    const spare = await readySpare(spares);
    // Started before any task was handed to it: nothing of a task in its environment.
    const environ = readFileSync(`/proc/${spare.pid}/environ`, 'utf8');
    expect(environ).not.toMatch(/CURSOR_|BACKCHANNEL_ACP|ACP_FIXTURE_STATE/);
    expect(groupOf(spare.pid!)).toBe(spare.pid);

    const second = await run(broker, spec(cwd, 'two'));
    expect(second.payload?.data).toMatchObject({ stop_reason: 'end_turn' });
    expect(JSON.stringify(second.payload?.data)).toContain('echo: two');
    expect(second.pid).toBe(spare.pid);
    expect(second.snapshot.state).toBe('succeeded');
  });

  it('puts the agent in the task’s process group: a SIGKILL of the group ends adapter and agent', async () => {
    const { broker, spares } = warmBroker();
    const cwd = tempDir();
    await run(broker, spec(cwd, 'one'));
    const spare = await readySpare(spares);
    const before = new Set(agentPids(cwd));
    const running = startTask(broker, spec(cwd, `wait SCRIPT:${JSON.stringify([{ untilCancelled: true }])}`));
    const agent = await waitFor(() => agentPids(cwd).find((pid) => !before.has(pid) && isAlive(pid)), 'the agent of the task');
    expect(running.handle.snapshot().pid).toBe(spare.pid);
    expect(groupOf(agent)).toBe(spare.pid);
    process.kill(-spare.pid!, 'SIGKILL');
    const done = await running.done;
    expect(done.snapshot.state).toBe('failed');
    expect(done.snapshot.message).toMatch(/killed by SIGKILL/);
    await waitUntilGone([spare.pid!, agent]);
  });

  it('cancels through the spare as through a fresh adapter: session/cancel, the work kept, nothing left', async () => {
    const { broker, spares } = warmBroker({ cancelGraceMs: 5000 });
    const cwd = tempDir();
    await run(broker, spec(cwd, 'one'));
    const spare = await readySpare(spares);
    const steps = [
      { say: 'Half done. ' },
      { tool: { id: 't1', title: 'Refactor a.ts', kind: 'edit', status: 'in_progress' } },
      { untilCancelled: true },
    ];
    const running = startTask(broker, spec(cwd, `do it SCRIPT:${JSON.stringify(steps)}`));
    await waitFor(() => running.partials.some((p) => (p.data as { step?: string }).step === 'Refactor a.ts'), 'the step text');
    expect(running.handle.snapshot().pid).toBe(spare.pid);
    running.handle.cancel('changed my mind');
    const done = await running.done;
    expect(done.error?.reason).toBe('cancelled');
    const data = done.error!.payload!.data as Record<string, unknown>;
    expect(data).toMatchObject({ text: 'Half done. ', stop_reason: 'cancelled' });
    // The agent got session/cancel and ended its turn: no signal was needed.
    expect(readdirSync(cwd)).toContain(`${String(data.session_id)}.cancelled`);
    expect(done.snapshot.signal).toBeNull();
    await waitUntilGone([spare.pid!, ...agentPids(cwd)]);
  });

  it('replaces the spare after each task and after its death, and kills it when the broker closes', async () => {
    const { broker, spares, close } = warmBroker();
    const cwd = tempDir();
    await run(broker, spec(cwd, 'one'));
    const used = await readySpare(spares);
    const second = await run(broker, spec(cwd, 'two'));
    expect(second.pid).toBe(used.pid);
    const next = await readySpare(spares, used.pid);
    // A spare that dies before its task is replaced, and the next task still runs (in the new one).
    process.kill(next.pid!, 'SIGKILL');
    const replacement = await readySpare(spares, next.pid);
    const third = await run(broker, spec(cwd, 'three'));
    expect(third.payload?.data).toMatchObject({ stop_reason: 'end_turn' });
    expect(third.pid).toBe(replacement.pid);
    const last = await readySpare(spares, replacement.pid);
    await close();
    expect(spares.current).toBeUndefined();
    // Every spare it ever started is gone once close() resolved: none left running, no zombie.
    expect(spares.started.filter(isAlive)).toEqual([]);
    expect(spares.started).toContain(last.pid);
  });

  it('lets a process whose broker closed exit: close() waits for the spare’s end, nothing else holds it', async () => {
    const cwd = tempDir();
    // The built broker in a process of its own: one ACP task, its spare ready, close — then the process must end by itself.
    const script = `
      import { TaskBroker, silentLogger } from ${JSON.stringify(path.join(ROOT, 'dist/broker/index.js'))};
      const broker = new TaskBroker({ ipcDir: ${JSON.stringify(path.join(cwd, 'ipc'))}, logger: silentLogger });
      const task = broker.submit(${JSON.stringify(spec(cwd, 'one'))});
      await task.result;
      await task.finished;
      const spares = broker.kinds.find((k) => k.spares).spares;
      while (spares.current?.pid === undefined) await new Promise((r) => setTimeout(r, 10));
      console.log(spares.current.pid);
      await broker.close();
      console.log('closed');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const [pid, said] = out.trim().split('\n');
    expect({ code, said }).toEqual({ code: 0, said: 'closed' });
    await waitUntilGone([Number(pid)]);
  });

  it('spawns afresh when Node would start differently (NODE_OPTIONS), and readies a spare that fits', async () => {
    const { broker, spares } = warmBroker();
    const cwd = tempDir();
    await run(broker, spec(cwd, 'one'));
    const spare = await readySpare(spares);
    const other = await run(broker, spec(cwd, 'two', { NODE_OPTIONS: '--no-warnings' }));
    expect(other.payload?.data).toMatchObject({ stop_reason: 'end_turn' });
    expect(other.pid).not.toBe(spare.pid);
    await waitUntilGone([spare.pid!]);
    const fitting = await readySpare(spares, spare.pid);
    expect(readFileSync(`/proc/${fitting.pid}/environ`, 'utf8')).toContain('NODE_OPTIONS=--no-warnings');
  });
});

describe.skipIf(process.platform === 'win32')('the spare adapter’s hand-off (main.js --spare)', () => {
  /** Runs a spare, writes `input` to its stdin and closes it; its exit code and stderr. */
  async function spareWith(input: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [ADAPTER, '--spare'], { stdio: ['pipe', 'ignore', 'pipe'], env: {} });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A spare that refused an over-long line closed its stdin before the rest was written.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    return { code, stderr };
  }

  it.each([
    ['not JSON', 'not json\n', 'the hand-off line is not JSON'],
    ['not an object', '[1]\n', 'the hand-off is not a JSON object'],
    ['a relative cwd', '{"cwd":"relative","env":{},"agent":["x"]}\n', 'the hand-off has no absolute `cwd`'],
    ['a number in env', '{"cwd":"/","env":{"A":1},"agent":["x"]}\n', 'the hand-off `env` has a value that is not a string'],
    ['no agent', '{"cwd":"/","env":{},"agent":[]}\n', 'the hand-off `agent` is not a command line'],
    [
      'a missing cwd',
      '{"cwd":"/no/such/dir/here","env":{},"agent":["x"]}\n',
      "cannot enter the task's directory /no/such/dir/here: ENOENT",
    ],
    ['a line over 1 MiB', `${'x'.repeat(1024 * 1024 + 10)}\n`, 'the hand-off line is over 1048576 bytes'],
  ])('refuses %s with one clear line and exit code 2', async (_what, input, why) => {
    const { code, stderr } = await spareWith(input);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(`[backchannel-acp] bad hand-off: ${why}`);
  });

  it('exits quietly (0) when its stdin ends without a task: a broker that went away', async () => {
    expect(await spareWith('')).toEqual({ code: 0, stderr: '' });
  });
});
