/**
 * ACP tasks (`TaskSpec.acp`, docs/acp.md), a kind of task on the seam in ../task-kinds.ts: the
 * task's command is an ACP agent, and each attempt runs it under the ACP adapter (src/acp, built to
 * dist/acp/main.js) — `<adapter> [--task-id=<id>] -- <agent command> <args…>` — with the adapter's
 * settings in BACKCHANNEL_ACP. The plan runs at submit AFTER admission judged the agent's own
 * command line, so the run policy judges the agent, never the adapter; the spec, its history and a
 * Retry keep the agent's command. A local attempt takes the kind's spare adapter, already started and
 * loaded, when it fits (./spare.ts: the warm adapter), instead of starting one.
 *
 * A named agent (`acp: {agent}`) adds the environment of the owner's config, and only to its own
 * command line; a request naming an agent whose command line it is not is refused. Nothing is read
 * from the task's input (red-team finding X1).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARG_TASK_ID } from '../../protocol/index.js';
import type { TaskOrigin, TaskSpec } from '../../model/task.js';
import type { TaskBudget } from '../../model/usage.js';
import { BrokerError } from '../errors.js';
import { effectiveArgv } from '../run-policy.js';
import type { KindContext, TaskKind, TaskRun } from '../task-kinds.js';
import type { AttemptSettings } from '../task/attempt.js';
import { ACP_SETTINGS_ENV, approvalsFor, type AcpAgent, type AcpOptions, type AcpSettings } from './settings.js';
import { sessionOfResult } from './session.js';
import { SpareAdapter } from './spare.js';

/** dist/acp/main.js beside this file's dist/broker/acp/. */
export function defaultAdapterPath(): string {
  return fileURLToPath(new URL('../../acp/main.js', import.meta.url));
}

export class AcpTasks implements TaskKind {
  /** The warm adapter: one spare adapter process, ready for the next local attempt (none when `warm` is off). */
  readonly spares: SpareAdapter | undefined;

  constructor(
    private readonly options: AcpOptions,
    private readonly context: KindContext,
  ) {
    const warm = options.warm ?? options.adapter === undefined;
    this.spares = warm ? new SpareAdapter(options.adapter ?? defaultAdapterPath(), (message) => context.warn(message)) : undefined;
  }

  close(): Promise<void> | undefined {
    return this.spares?.close();
  }

  plan(_id: string, spec: TaskSpec, cwd: string): TaskRun | undefined {
    if (spec.acp === undefined || spec.acp === false) return undefined;
    const request = spec.acp === true ? {} : spec.acp;
    const agentName = request.agent ?? namedByPreset(spec.preset);
    const agent = agentName === undefined ? undefined : this.namedAgent(agentName, spec, cwd);
    const door: TaskOrigin = spec.origin ?? 'cli';
    const onBudget = request.onBudget ?? this.options.onBudget ?? 'pause';
    const settings: AcpSettings = {
      door,
      approvals: approvalsFor(door, this.options),
      onBudget,
      ...(onBudget === 'pause' && spec.maxCostUsd !== undefined ? { maxCostUsd: spec.maxCostUsd } : {}),
      ...(onBudget === 'pause' && spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
      // Only the owner's own `run` may run arbitrary commands: the agent's terminal is advertised there only.
      terminal: door === 'cli',
      ...(agentName !== undefined ? { agentName } : {}),
    };
    const session = spec.parent === undefined ? undefined : sessionOfResult(this.context.result?.(spec.parent));
    if (session) settings.session = session;
    return new AcpRun(this.options.adapter ?? defaultAdapterPath(), agentCommand(spec, cwd), settings, agent?.env, this.spares);
  }

  /** The owner's agent `name`, when `spec` runs its command line; a refusal otherwise. */
  private namedAgent(name: string, spec: TaskSpec, cwd: string): AcpAgent {
    const agent = this.options.agents?.[name];
    const names = Object.keys(this.options.agents ?? {});
    if (!agent) {
      const known = names.length ? names.join(', ') : 'none: the owner names them under `acp: agents:` in the config file';
      throw new BrokerError('invalid_option', `no ACP agent named "${name.slice(0, 64)}" (agents: ${known})`);
    }
    const wanted = effectiveArgv(agent.command, agent.args, cwd);
    const given = effectiveArgv(spec.command, spec.args ?? [], cwd);
    if (wanted.length !== given.length || wanted.some((part, i) => part !== given[i] && !(i === 0 && sameProgram(part, given[0]!)))) {
      throw new BrokerError(
        'invalid_option',
        `the command is not the ACP agent "${name}"'s (\`${[agent.command, ...agent.args].join(' ')}\`)`,
      );
    }
    return agent;
  }
}

/** One ACP task's run: launches each attempt under the adapter, and holds the caps the adapter enforces. */
class AcpRun implements TaskRun {
  constructor(
    private readonly adapter: string,
    private readonly agent: string[],
    private readonly settings: AcpSettings,
    private readonly agentEnv: Record<string, string> | undefined,
    private readonly spares: SpareAdapter | undefined,
  ) {}

  launch(attempt: AttemptSettings): void {
    const own = attempt.args.at(-1)?.startsWith(ARG_TASK_ID) ? [attempt.args.at(-1)!] : [];
    attempt.command = this.adapter;
    attempt.args = [...own, '--', ...this.agent];
    attempt.env = { ...attempt.env, ...this.agentEnv, [ACP_SETTINGS_ENV]: JSON.stringify(this.settings) };
    attempt.acp = { agent: this.agent, settings: JSON.stringify(this.settings) };
    const spares = this.spares;
    if (spares) attempt.spare = (settings, env) => spares.take(settings, env, this.agent);
  }

  /** With `pause`, the adapter holds the cost and token caps (it asks to raise them); the broker keeps the turn cap. */
  budget(budget: TaskBudget): TaskBudget | undefined {
    if (this.settings.onBudget !== 'pause') return budget;
    const { maxCostUsd: _cost, maxTokens: _tokens, ...rest } = budget;
    return Object.keys(rest).length > 0 ? rest : undefined;
  }
}

/** A script run by Node (as the broker runs a task command): a path, even without a slash. */
const SCRIPT = /\.(mjs|cjs|js|ts|mts|cts)$/i;

/** `acp:<name>`, the preset admission named the spec after: that named agent. */
function namedByPreset(preset: string | undefined): string | undefined {
  return preset?.startsWith('acp:') ? preset.slice(4) : undefined;
}

/**
 * The agent's command line as the adapter runs it: a script or a program given as a path made
 * absolute against the task's directory (a coding task's attempts run in its worktree, where a
 * relative path would name another file than the one the run policy judged).
 */
function agentCommand(spec: TaskSpec, cwd: string): string[] {
  const [first, ...rest] = spec.args ?? [];
  const isNode = spec.command === 'node' || spec.command === 'node.exe';
  if (isNode && first !== undefined && !first.startsWith('-')) return [spec.command, path.resolve(cwd, first), ...rest];
  const asPath = SCRIPT.test(spec.command) || spec.command.includes('/') || spec.command.includes('\\');
  const command = asPath ? path.resolve(cwd, spec.command) : spec.command;
  return [command, ...(spec.args ?? [])];
}

/**
 * The same program: the same path, or a name and the absolute path admission ran it by (from an
 * untrusted door, a program allowed by name runs from where the run policy found it on PATH).
 */
function sameProgram(wanted: string, given: string): boolean {
  if (path.isAbsolute(wanted)) return path.isAbsolute(given) && path.resolve(wanted) === path.resolve(given);
  return path.isAbsolute(given) && path.basename(given) === wanted;
}
