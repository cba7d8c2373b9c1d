/**
 * The broker's options, their named defaults, and how one attempt's settings are made from a task
 * spec, the defaults and the broker's environment.
 */
import os from 'node:os';
import { ARG_TASK_ID, ENV_MAX_COST_USD, ENV_MAX_TOKENS, ENV_MAX_TURNS } from '../protocol/index.js';
import type { Clock } from '../model/clock.js';
import type { RunPolicy } from './run-policy.js';
import { BrokerError } from './errors.js';
import { checkDuration } from './guards/duration.js';
import type { Logger } from './log.js';
import type { TokenBudgetOptions } from './guards/token-budget.js';
import type { DoorBudgets } from './guards/budget.js';
import type { AcpOptions } from './acp/index.js';
import { filterEnv, type EnvPolicy } from './process/environment.js';
import type { AgentCpu } from './process/agent-weight.js';
import type { AttemptSettings } from './task/attempt.js';
import type { Task } from './task/task.js';
import { DEFAULT_CHANNEL_LIMITS, type ChannelLimits } from './transport/channel.js';
import type { TaskSpec } from '../model/task.js';
import type { AttemptQueue } from './queue/attempt-queue.js';
import type { KindContext, TaskKind } from './task-kinds.js';

/** Named defaults, each with its reason. */
export const DEFAULTS = {
  /** Two per core keeps a 2-core laptop responsive while agents mostly wait on the network. */
  concurrency: Math.max(2, os.cpus().length * 2),
  /** Time a cancelled agent gets to send `cancelled` and exit by itself. */
  cancelGraceMs: 3000,
  /** SIGTERM → SIGKILL, as execa's forceKillAfterDelay. */
  killGraceMs: 1000,
  /** Output still in flight after exit normally arrives within a few ms; grandchildren may hold pipes. */
  drainMs: 1000,
  /** Lines of log kept per task. */
  maxLogLines: 500,
  /** Finished tasks kept in memory and in the journal. */
  historyLimit: 1000,
  /**
   * The deadline of an attempt that sets none (and whose broker sets no `defaults.timeoutMs`): long
   * enough for a whole-repository run of a coding CLI, short enough that a hung one does not hold a
   * slot (and spend) all night. `timeoutMs: 0` (`--timeout 0`) turns it off.
   */
  timeoutMs: 2 * 60 * 60_000,
  /**
   * The default heartbeat watchdog: 3 × the 10 s the agent is asked to heartbeat at (the hand-off's
   * CURSOR_HEARTBEAT_MS is a third of it), so two lost heartbeats are not a stall. Armed by the
   * agent's first heartbeat: an agent that never heartbeats (a plain script, a CLI) is not watched.
   * `heartbeatTimeoutMs: 0` (`--heartbeat-timeout 0`) turns it off; a value arms it from the start.
   */
  heartbeatTimeoutMs: 30_000,
  /** How long an `ask` waits for a person. */
  askTimeoutMs: 5 * 60_000,
  /** At most one journal progress record per task per second. */
  progressJournalIntervalMs: 1000,
  /** How often to look for spool files of interrupted tasks whose agents outlived the last broker. */
  spoolCheckMs: 2000,
  /**
   * How long agents that outlived a killed broker may still finish (and spool their result) after a
   * restart before they are stopped. Long enough for an SDK agent to wrap up, short enough that a
   * forgotten agent does not run (and spend) for hours.
   */
  orphanGraceMs: 60_000,
} as const;

export interface BrokerOptions {
  /** Tasks running at once. @default 2 × cores (a remote `queue` may set its own) */
  concurrency?: number;
  /** Private endpoint directory. @default $CURSOR_IPC_DIR, else $XDG_RUNTIME_DIR or tmpdir + /backchannel-<uid> */
  ipcDir?: string;
  /** Where the history journal lives; no history without it. */
  dataDir?: string;
  /**
   * Where coding tasks' worktrees are made (`TaskSpec.worktree`, docs/coding-agents.md).
   * @default `<dataDir>/worktrees`; without either, a task asking for a worktree is refused
   */
  worktreeDir?: string;
  /** Worktrees older than this are discarded (at start, then hourly); never one of a live task. @default none (kept until discarded) */
  worktreeMaxAgeMs?: number;
  /** Framing and connection limits (see docs/protocol.md §2). */
  limits?: Partial<ChannelLimits>;
  cancelGraceMs?: number;
  killGraceMs?: number;
  /**
   * After the agent exited: how long its output pipes are waited for (a grandchild may hold them),
   * and how long the socket may stay quiet before it is closed (one still delivering is read on, up
   * to 30 s).
   */
  drainMs?: number;
  /** After a restart: time the last broker's surviving agents get to finish before they are stopped. @default 60000 */
  orphanGraceMs?: number;
  /**
   * The default budget of a task that sets none, by the door it came through (the config file's
   * `budget:` section, ./guards/budget.ts). @default none
   */
  budgets?: DoorBudgets;
  /**
   * The default heartbeat watchdog of a task that sets none (armed by its first heartbeat; see
   * DEFAULTS.heartbeatTimeoutMs). @default 30000; 0 turns the default watchdog off
   */
  watchdogMs?: number;
  /** Defaults for task specs that do not set these. */
  defaults?: Pick<TaskSpec, 'timeoutMs' | 'heartbeatTimeoutMs' | 'retries'>;
  /** Which of the broker's environment variables sub-agents inherit. */
  env?: EnvPolicy;
  /** Where the broker logs. @default silentLogger (the CLI, the headless server and the app pass their own) */
  logger?: Logger;
  tokenBudget?: TokenBudgetOptions;
  askTimeoutMs?: number;
  maxLogLines?: number;
  /** Finished tasks kept in history, at most. @default 1000 */
  historyLimit?: number;
  /** Finished tasks that ended longer ago than this leave history (their figures stay in the insights). @default none */
  historyMaxAgeMs?: number;
  /** Log the first 100 characters of every received line to the task log. @default BACKCHANNEL_DEBUG=1 */
  traceLines?: boolean;
  /** Where attempts run. @default the local queue (processes on this machine); see src/fleet for Redis */
  queue?: AttemptQueue;
  /**
   * ACP tasks (`TaskSpec.acp`): named agents, the approval policy, what a cost cap does (the config's
   * `acp:`). @default the defaults of docs/acp.md
   */
  acp?: AcpOptions;
  /**
   * More kinds of task, hooked in after coding tasks through the plan / prepare / capture seam
   * (./task-kinds.ts), each made with the broker's context. @default none
   */
  kinds?: (context: KindContext) => readonly TaskKind[];
  /**
   * What a task from a door other than the owner's own `backchannel run` may start (see
   * ./run-policy.ts). @default no rules: such a task is refused (the hub passes the owner's policy)
   */
  runPolicy?: RunPolicy;
  /**
   * Refuse socket connections whose first line carries no token. @default false on POSIX, where the
   * socket is private to our user (a wrong token is refused either way); named pipes always require it.
   */
  requireToken?: boolean;
  /**
   * How the agents weigh on the CPU when it is short (./process/agent-weight.ts): `shared`, together
   * about what one session weighs, so the hub and the owner's other programs keep answering; `full`,
   * each agent a whole session, as a program started from a terminal of its own (`backchannel check`,
   * whose timing judgements are about the agent alone). @default 'shared'
   */
  agentCpu?: AgentCpu;
  /**
   * Where the wait between attempts, and the interval between progress records, take their time (a
   * test's fake clock). @default systemClock
   */
  clock?: Clock;
}

export type ResolvedOptions = Required<
  Pick<
    BrokerOptions,
    'concurrency' | 'cancelGraceMs' | 'killGraceMs' | 'drainMs' | 'orphanGraceMs' | 'askTimeoutMs' | 'maxLogLines' | 'historyLimit'
  >
> &
  BrokerOptions & { limits: ChannelLimits };

/** The options with every default filled in; throws a BrokerError for an invalid one. */
export function resolveOptions(options: BrokerOptions): ResolvedOptions {
  const resolved = {
    concurrency: options.queue?.concurrency ?? DEFAULTS.concurrency,
    cancelGraceMs: DEFAULTS.cancelGraceMs,
    killGraceMs: DEFAULTS.killGraceMs,
    drainMs: DEFAULTS.drainMs,
    orphanGraceMs: DEFAULTS.orphanGraceMs,
    askTimeoutMs: DEFAULTS.askTimeoutMs,
    maxLogLines: DEFAULTS.maxLogLines,
    historyLimit: DEFAULTS.historyLimit,
    ...stripUndefined(options),
    limits: { ...DEFAULT_CHANNEL_LIMITS, ...stripUndefined(options.limits ?? {}) },
  };
  for (const key of ['cancelGraceMs', 'killGraceMs', 'drainMs', 'orphanGraceMs', 'askTimeoutMs'] as const)
    checkDuration(key, resolved[key]);
  checkDuration('defaults.timeoutMs', options.defaults?.timeoutMs);
  checkDuration('defaults.heartbeatTimeoutMs', options.defaults?.heartbeatTimeoutMs);
  checkDuration('watchdogMs', options.watchdogMs);
  checkDuration('limits.authTimeoutMs', resolved.limits.authTimeoutMs);
  const { concurrency } = resolved;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new BrokerError('invalid_option', `Expected \`concurrency\` to be a positive integer, got \`${String(concurrency)}\``);
  }
  return resolved;
}

/**
 * The environment of a sub-agent: the broker's filtered one, with the spec's names set or (`undefined`)
 * removed. Without overrides it is `base` itself (not a copy per task): callers never modify it.
 */
export function mergeEnv(base: Record<string, string>, overrides: TaskSpec['env']): Record<string, string> {
  if (!overrides) return base;
  const env = { ...base };
  for (const [name, value] of Object.entries(overrides ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Everything attempt `attempt` of `task` runs with. */
export function attemptSettings(
  task: Task,
  attempt: number,
  options: ResolvedOptions,
  place: { endpointDir: string; baseEnv: Record<string, string> },
): AttemptSettings {
  const spec = task.spec;
  const heartbeat = spec.heartbeatTimeoutMs ?? options.defaults?.heartbeatTimeoutMs;
  const args = [...(spec.args ?? [])];
  if (spec.taskIdArg !== false) args.push(`${ARG_TASK_ID}${task.id}`);
  return {
    taskId: task.id,
    attempt,
    command: spec.command,
    args,
    ...(spec.preset !== undefined ? { preset: spec.preset } : {}),
    cwd: task.cwd,
    env: withBudgetEnv(mergeEnv(spec.baseEnv ? filterEnv(spec.baseEnv, options.env) : place.baseEnv, spec.env), spec),
    input: spec.input,
    ...(spec.tools && spec.tools.length > 0 ? { tools: spec.tools } : {}),
    timeoutMs: spec.timeoutMs ?? options.defaults?.timeoutMs ?? DEFAULTS.timeoutMs,
    heartbeatTimeoutMs: heartbeat ?? options.watchdogMs ?? DEFAULTS.heartbeatTimeoutMs,
    ...(heartbeat === undefined ? { watchdogFromFirstHeartbeat: true } : {}),
    endpointDir: place.endpointDir,
    spoolDir: place.endpointDir,
    limits: options.limits,
    cancelGraceMs: options.cancelGraceMs,
    killGraceMs: options.killGraceMs,
    drainMs: options.drainMs,
    traceLines: options.traceLines ?? process.env.BACKCHANNEL_DEBUG === '1',
    requireToken: options.requireToken ?? false,
    agentCpu: options.agentCpu ?? 'shared',
  };
}

/** The task's budget in the agent's environment (ENV_MAX_TOKENS, …), for an agent that passes it to its CLI. */
function withBudgetEnv(env: Record<string, string>, spec: TaskSpec): Record<string, string> {
  const budget: Array<[string, number | undefined]> = [
    [ENV_MAX_TOKENS, spec.maxTokens],
    [ENV_MAX_COST_USD, spec.maxCostUsd],
    [ENV_MAX_TURNS, spec.maxTurns],
  ];
  if (budget.every(([, value]) => value === undefined)) return env;
  const out = { ...env };
  for (const [name, value] of budget) if (value !== undefined) out[name] = String(value);
  return out;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
