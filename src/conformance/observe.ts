/**
 * Runs an agent once under a real TaskBroker, the way a scenario asks (input, which hand-off it
 * gets, a watchdog, a cancel), and records what a judge needs: every payload as received, the
 * broker's log of the task (problems, received-line trace), the final snapshot and the timing.
 */
import os from 'node:os';
import type { TaskBroker } from '../broker/broker.js';
import { resolveCommand } from '../broker/process/spawn-agent.js';
import type { Payload } from '../protocol/index.js';
import type { LogLine, TaskSnapshot, TaskSpec } from '../model/task.js';

/** How one run differs from a plain start. */
export interface RunPlan {
  /** Hand-off variables the agent must do without (the run starts it through `env -u`). */
  unset?: string[];
  /** Hand-off variables told differently from the broker's (the run starts it through `env NAME=value`). */
  set?: Record<string, string>;
  /** Append `--task-id=`. @default true */
  taskIdArg?: boolean;
  /** The `conformance` input field (docs/protocol.md §10). */
  conformance?: { scenario: string; echo?: string; busy_ms?: number };
  heartbeatTimeoutMs?: number;
  /** Cancel as soon as the agent has said something. */
  cancel?: boolean;
}

export interface Observation {
  plan: RunPlan;
  snapshot: TaskSnapshot;
  /** Partial, heartbeat-free payloads and the final one, as the agent sent them (final: with the broker's meta). */
  payloads: Payload[];
  log: LogLine[];
  /** When each line of the agent arrived (ms since start, in order; the broker runs with `traceLines`). */
  receivedAt: number[];
  /** When the cancel was sent, and when the agent's processes were gone (ms since start). */
  cancelAt?: number;
  endedAt: number;
  /** How busy the machine was during the run (see `MachineLoad`). */
  load: MachineLoad;
}

/**
 * How busy the machine was while a run lasted: the timing a judge sees is only as good as this.
 * `late` lists the times this process's own timer ran late (a line can reach the broker that much
 * after the agent wrote it): `at` ms since the start, `ms` how late; `delayMs` is the worst of them;
 * `perCore` is the one-minute load average per CPU at the end.
 */
export interface MachineLoad {
  delayMs: number;
  perCore: number;
  late: Array<{ at: number; ms: number }>;
}

/** How often the run's own timer ticks to measure how late it runs, and the lateness worth recording. */
const TICK_MS = 50;
const LATE_MS = 20;

/** How late this process ran at worst between `from` and `to` (ms since the start of the run). */
export function delayDuring(load: MachineLoad, from: number, to: number): number {
  return Math.max(0, ...load.late.filter((l) => l.at >= from && l.at - l.ms <= to).map((l) => l.ms));
}

/** Records how late a TICK_MS timer runs, until stopped. */
function watchLateness(started: number): { stop(): MachineLoad } {
  const late: MachineLoad['late'] = [];
  let expected = Date.now() + TICK_MS;
  const timer = setInterval(() => {
    const now = Date.now();
    if (now - expected > LATE_MS) late.push({ at: now - started, ms: now - expected });
    expected = now + TICK_MS;
  }, TICK_MS);
  return {
    stop() {
      clearInterval(timer);
      const delayMs = Math.max(0, ...late.map((l) => l.ms));
      return { delayMs, perCore: os.loadavg()[0]! / os.availableParallelism(), late };
    },
  };
}

export interface AgentUnderTest {
  command: string;
  args: string[];
  cwd?: string;
  /** The agent's own input, merged with the `conformance` field when it is an object. */
  input?: unknown;
  timeoutMs: number;
}

/** Bounds every run: a scenario never waits for a hung agent longer than this. */
export const RUN_TIMEOUT_MS = 20_000;

/** The spec of one run: `env -u` drops hand-off variables (the broker sets them after the spec's env). */
export function specOf(agent: AgentUnderTest, plan: RunPlan): TaskSpec {
  let command = agent.command;
  let args = agent.args;
  if (plan.unset?.length || plan.set) {
    const resolved = resolveCommand(agent.command, agent.args);
    command = 'env';
    args = [
      ...(plan.unset ?? []).flatMap((name) => ['-u', name]),
      ...Object.entries({ ...resolved.env, ...plan.set }).map(([k, v]) => `${k}=${v}`),
      resolved.file,
      ...resolved.args,
    ];
  }
  const own = agent.input;
  const merged = own === undefined || (typeof own === 'object' && own !== null && !Array.isArray(own));
  const input = plan.conformance && merged ? { ...(own as object | undefined), conformance: plan.conformance } : own;
  return {
    command,
    args,
    ...(agent.cwd ? { cwd: agent.cwd } : {}),
    input,
    taskIdArg: plan.taskIdArg ?? true,
    timeoutMs: agent.timeoutMs,
    ...(plan.heartbeatTimeoutMs ? { heartbeatTimeoutMs: plan.heartbeatTimeoutMs } : {}),
    label: `check ${plan.conformance?.scenario ?? ''}`.trim(),
  };
}

export async function observe(broker: TaskBroker, agent: AgentUnderTest, plan: RunPlan): Promise<Observation> {
  const started = Date.now();
  const lateness = watchLateness(started);
  const handle = broker.submit(specOf(agent, plan));
  const payloads: Payload[] = [];
  const receivedAt: number[] = [];
  let cancelAt: number | undefined;
  let lines = 0;
  handle.on('update', (update) => {
    if (update.kind === 'partial' && update.payload) payloads.push(update.payload);
    if (update.kind === 'log' && isReceived(update.line)) {
      lines += 1;
      receivedAt.push(Date.now() - started);
    }
    // After its first partial or heartbeat (not the hello): the agent is at work and listening.
    if (plan.cancel && cancelAt === undefined && (update.kind === 'partial' || lines >= 2)) {
      cancelAt = Date.now() - started;
      handle.cancel('conformance check: cancel scenario');
    }
  });
  await handle.result.catch(() => {});
  await handle.finished;
  const endedAt = Date.now() - started;
  const load = lateness.stop();
  const snapshot = handle.snapshot();
  if (snapshot.result) payloads.push(snapshot.result);
  const log = broker.logOf(handle.id);
  return { plan, snapshot, payloads, log, receivedAt, endedAt, load, ...(cancelAt !== undefined ? { cancelAt } : {}) };
}

/** A broker log line saying a line arrived (the broker runs with `traceLines`). */
export function isReceived(line: LogLine | undefined): boolean {
  return line?.event?.kind === 'received';
}
