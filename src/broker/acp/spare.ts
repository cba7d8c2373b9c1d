/**
 * The warm adapter (docs/acp.md, docs/performance.md "Issue 44"): ONE spare ACP adapter process kept
 * ready, so that an ACP task's attempt does not pay Node's start and the adapter's load on its path.
 *
 * The spare is `<adapter> --spare`, started through the spawner thread as any agent is — leading a
 * process group of its own — but with its stdin a pipe, with an environment of only the variables Node
 * reads as it starts (no task's secret before its hand-off), in `/`. It loads the adapter and waits.
 * An attempt takes it through `AttemptSettings.spare` (set by the ACP run's launch): the hand-off
 * line (the task's directory, its whole environment — hand-off variables and BACKCHANNEL_ACP
 * included — and the agent's command line) goes down its stdin, and the spare applies the directory
 * and the environment before it starts the agent, which so runs in the spare's group: the task's
 * pid is the spare's, and its one process-group kill ends adapter and agent alike.
 *
 * - A spare is started at the first local ACP attempt (which spawns its own adapter, as before), and
 *   again after each hand-off: once the adopted process exits or REPLACE_AFTER_MS after the hand-off,
 *   whichever comes first (its start, a Node start and the adapter's load, is then off the task's path).
 * - An attempt takes it only when it is the process a fresh spawn would be: the same adapter program,
 *   the same CPU weighing, and the same values of the variables Node reads at its start; otherwise it
 *   spawns afresh (as before), and the spare is replaced by one that fits the latest task.
 * - A spare that dies before its task is replaced (MAX_DEATHS times in a row at most: then ACP tasks
 *   start their own adapter, and the broker warns once); a broker that closes kills it (its group, by
 *   pid) and waits for its exit. A hub that dies closes the spare's stdin: it exits by itself.
 * - Not on Windows (no process groups to hand over): every attempt spawns there, as before.
 */
import path from 'node:path';
import { killTree } from '../../base/kill-tree.js';
import type { AgentCpu } from '../process/agent-weight.js';
import { resolveCommand, spawnSpare, type AgentProcess, type SpareProcess } from '../process/spawn-agent.js';
import type { AttemptSettings } from '../task/attempt.js';

/** Variables Node (or Electron run as Node) reads as it starts: a spare started with other values is another process. */
export const STARTUP_VARIABLES = [
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'NODE_ICU_DATA',
  'NODE_NO_WARNINGS',
  'NODE_PENDING_DEPRECATION',
  'NODE_PRESERVE_SYMLINKS',
  'NODE_V8_COVERAGE',
  'NODE_COMPILE_CACHE',
  'UV_THREADPOOL_SIZE',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
];

/** After a hand-off, the next spare starts when the adopted process exits, or this long after, whichever is first. */
export const REPLACE_AFTER_MS = 1000;
/** Spares that may die in a row before their task before the broker stops starting them. */
export const MAX_DEATHS = 3;

interface Spare {
  readonly process: SpareProcess;
  /** What it was started with: the startup variables and the CPU weighing. */
  readonly env: Record<string, string>;
  readonly cpu: AgentCpu;
}

export class SpareAdapter {
  private spare: Spare | undefined;
  private deaths = 0;
  private closed = false;
  /** Pending replacements (see replaceAfter). */
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Started, by pid (the spare now, and any being killed): for tests and diagnostics. */
  readonly started: number[] = [];

  constructor(
    private readonly adapter: string,
    private readonly warn: (message: string) => void,
  ) {}

  /** The spare process, when there is one (tests). */
  get current(): SpareProcess | undefined {
    return this.spare?.process;
  }

  /**
   * The spare, handed this attempt's task, when it is the process a fresh spawn would be; else
   * undefined (the attempt spawns as before), and a spare that fits is started for the next one.
   */
  take(settings: AttemptSettings, env: Record<string, string>, agent: string[]): AgentProcess | undefined {
    if (this.closed || process.platform === 'win32' || settings.command !== this.adapter) return undefined;
    const startup = startupEnv(env);
    const spare = this.spare;
    if (spare && (spare.process.gone || !sameEnv(spare.env, startup) || spare.cpu !== settings.agentCpu)) void this.discard(spare);
    if (!spare || !this.spare) {
      this.start(startup, settings.agentCpu);
      return undefined;
    }
    // Its pid may still be on its way from the spawner thread (a task right behind the last): the
    // hand-off follows its spawn there, and the attempt waits for its 'spawn' as for a fresh one.
    this.spare = undefined;
    const line = JSON.stringify({ cwd: path.resolve(settings.cwd), env: { ...env, ...resolveCommand(this.adapter, []).env }, agent });
    spare.process.handOff(`${line}\n`);
    this.deaths = 0;
    this.replaceAfter(spare.process, startup, settings.agentCpu);
    return spare.process;
  }

  /** Kills the spare (its group) and resolves once it has exited; no spare starts after. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    const spare = this.spare;
    this.spare = undefined;
    if (spare) await this.discard(spare);
  }

  /** Starts the next spare when `adopted` exits or REPLACE_AFTER_MS from now, whichever is first. */
  private replaceAfter(adopted: AgentProcess, env: Record<string, string>, cpu: AgentCpu): void {
    let timer: NodeJS.Timeout | undefined = undefined;
    const start = () => {
      clearTimeout(timer);
      this.timers.delete(timer!);
      this.start(env, cpu);
    };
    timer = setTimeout(start, REPLACE_AFTER_MS);
    timer.unref();
    this.timers.add(timer);
    adopted.once('exit', start);
  }

  private start(env: Record<string, string>, cpu: AgentCpu): void {
    if (this.closed || this.spare || this.deaths >= MAX_DEATHS) return;
    const child = spawnSpare(resolveCommand(this.adapter, ['--spare']), path.parse(process.cwd()).root, env, cpu);
    const spare: Spare = { process: child, env, cpu };
    this.spare = spare;
    child.on('error', () => {
      if (child.pid === undefined) this.died(spare);
    });
    child.once('spawn', () => this.started.push(child.pid!));
    child.once('exit', () => this.died(spare));
  }

  /** A spare gone before its task: replaced, unless spares keep dying. */
  private died(spare: Spare): void {
    if (this.spare !== spare) return;
    this.spare = undefined;
    const said = String(spare.process.stderr.read() ?? '')
      .trim()
      .split('\n')
      .at(-1);
    spare.process.stdout.destroy();
    spare.process.stderr.destroy();
    this.deaths += 1;
    if (this.deaths >= MAX_DEATHS) {
      this.warn(`the spare ACP adapter died ${MAX_DEATHS} times before its task${said ? ` (${said})` : ''}: ACP tasks start their own`);
      return;
    }
    this.start(spare.env, spare.cpu);
  }

  /** Kills a spare that will take no task (its group, by pid); resolves at its exit. */
  private discard(spare: Spare): Promise<void> {
    if (this.spare === spare) this.spare = undefined;
    const child = spare.process;
    if (child.gone) return Promise.resolve();
    // A waiting spare keeps nothing alive: its exit, awaited now, must still arrive.
    child.hold();
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.on('error', () => child.pid === undefined && resolve());
    });
    const kill = () => {
      try {
        killTree(child.pid!, 'SIGKILL');
      } catch {
        // Gone already (its exit is on its way).
      }
    };
    if (child.pid === undefined) child.once('spawn', kill);
    else kill();
    void exited.then(() => {
      child.stdout.destroy();
      child.stderr.destroy();
    });
    return exited;
  }
}

function startupEnv(env: Record<string, string>): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of STARTUP_VARIABLES) if (env[name] !== undefined) picked[name] = env[name];
  return picked;
}

function sameEnv(a: Record<string, string>, b: Record<string, string>): boolean {
  return STARTUP_VARIABLES.every((name) => a[name] === b[name]);
}
