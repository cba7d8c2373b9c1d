/**
 * ACP tasks' settings (docs/acp.md): the owner's `acp:` config section read into broker options
 * (named agents, the approval policy per tool kind and door, what a cost cap does), and the settings
 * one task's adapter gets in `BACKCHANNEL_ACP` (the contract with src/acp: door, approvals resolved
 * for that door, onBudget and the caps the adapter holds, terminal, the session a follow-up continues).
 * Named agents come from the owner's config only: nothing here is ever read from a task's input.
 */
import path from 'node:path';
import * as z from 'zod/mini';
import { firstProblem, must, noKey } from '../../model/shapes.js';
import { ON_BUDGET, type OnBudget } from '../../model/task-request.js';
import { TASK_ORIGINS, type TaskOrigin } from '../../model/task.js';
import { BrokerError } from '../errors.js';
import { expandPath } from '../run-policy.js';
import {
  APPROVAL_DECISIONS,
  DEFAULT_APPROVALS,
  ENV_ACP_SETTINGS,
  TOOL_KINDS,
  type ApprovalDecision,
  type Approvals,
  type ToolKind,
} from '../../protocol/acp-settings.js';

/** The environment variable the adapter reads its settings from (and deletes before starting the agent). */
export const ACP_SETTINGS_ENV = ENV_ACP_SETTINGS;
export { DEFAULT_APPROVALS, TOOL_KINDS, type Approvals, type ToolKind };
export const DECISIONS = APPROVAL_DECISIONS;
export type Decision = ApprovalDecision;

/** A named agent of the owner's config: its command line and environment. */
export interface AcpAgent {
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** The prompt its preset starts with (a schedule's fires send it). */
  prompt?: string;
}

/** The broker's ACP options (`BrokerOptions.acp`), from the config file's `acp:` section. */
export interface AcpOptions {
  /** Named agents: `acp:<name>` presets, and their environment. @default none */
  agents?: Record<string, AcpAgent>;
  /** The approval policy: `default` for every door, then a door's own. @default DEFAULT_APPROVALS */
  approvals?: Partial<Record<TaskOrigin | 'default', Partial<Approvals>>>;
  /** What a cost cap does when the task does not say. @default 'pause' */
  onBudget?: OnBudget;
  /** The adapter program. @default dist/acp/main.js of this installation */
  adapter?: string;
  /**
   * Keep one spare adapter ready, started and loaded, for the next ACP task (the warm adapter,
   * ./spare.ts). @default true with the built-in adapter; false with another `adapter` (a program
   * that may have no `--spare` mode)
   */
  warm?: boolean;
}

/** What one task's adapter gets in BACKCHANNEL_ACP (the contract with src/acp). */
export interface AcpSettings {
  door: TaskOrigin;
  approvals: Approvals;
  onBudget: OnBudget;
  maxCostUsd?: number;
  maxTokens?: number;
  terminal: boolean;
  session?: { id: string; transcript?: unknown[] };
  agentName?: string;
}

/** The approvals of `door`: the defaults, then the config's `default`, then the door's own. */
export function approvalsFor(door: TaskOrigin, options: AcpOptions): Approvals {
  return { ...DEFAULT_APPROVALS, ...options.approvals?.default, ...options.approvals?.[door] };
}

const decision = z.enum(DECISIONS, { error: must(`must be one of ${DECISIONS.join(', ')}`) });
const KIND_POLICY = z.strictObject(
  Object.fromEntries(TOOL_KINDS.map((kind) => [kind, z.optional(decision)])) as Record<ToolKind, z.ZodMiniOptional<typeof decision>>,
  { error: (issue) => noKey(TOOL_KINDS.join(', '))(issue) ?? must('must be a mapping of tool kinds')(issue) },
);
const APPROVAL_DOORS = ['default', ...TASK_ORIGINS] as const;
const strings = z.array(z.string({ error: must('must be a string') }), { error: must('must be a list of strings') });
const AGENT = z.strictObject(
  {
    command: z
      .string({ error: must('must be a string (the agent’s program)') })
      .check(z.minLength(1, { error: must('must not be empty') })),
    args: z.optional(strings),
    env: z.optional(z.record(z.string(), z.string({ error: must('must be a string') }), { error: must('must be a mapping of strings') })),
    prompt: z.optional(z.string({ error: must('must be a string') })),
  },
  { error: (issue) => noKey('command, args, env, prompt')(issue) ?? must('must be a mapping')(issue) },
);
const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const ACP_SECTION = z.strictObject(
  {
    agents: z.optional(
      z.record(z.string(), AGENT, { error: must('must be a mapping of names to agents') }).check((ctx) => {
        const bad = Object.keys(ctx.value).find((name) => !AGENT_NAME.test(name));
        if (bad !== undefined)
          ctx.issues.push({ code: 'custom', input: bad, message: must('names must be like claude or codex-acp')({ input: bad }) });
      }),
    ),
    approvals: z.optional(
      z.strictObject(
        Object.fromEntries(APPROVAL_DOORS.map((door) => [door, z.optional(KIND_POLICY)])) as Record<
          (typeof APPROVAL_DOORS)[number],
          z.ZodMiniOptional<typeof KIND_POLICY>
        >,
        { error: (issue) => noKey(APPROVAL_DOORS.join(', '))(issue) ?? must('must be a mapping of doors')(issue) },
      ),
    ),
    on_budget: z.optional(z.enum(ON_BUDGET, { error: must(`must be one of ${ON_BUDGET.join(', ')}`) })),
  },
  { error: (issue) => noKey('agents, approvals, on_budget')(issue) ?? must('must be a mapping')(issue) },
);

/**
 * The `acp:` section read, or throws a BrokerError naming the field (`file: acp.agents.x.command must …`).
 * An agent's program given as a path resolves against the file's directory, as `run_policy:` does.
 */
export function parseAcpConfig(section: Record<string, unknown> | undefined, file: string): AcpOptions | undefined {
  if (section === undefined) return undefined;
  const parsed = z.safeParse(ACP_SECTION, section);
  if (!parsed.success) throw new BrokerError('invalid_option', `${file}: ${firstProblem(parsed.error, 'acp')}`);
  const { agents, approvals, on_budget } = parsed.data;
  const base = path.dirname(file);
  const options: AcpOptions = {};
  if (agents) {
    options.agents = {};
    for (const [name, agent] of Object.entries(agents)) {
      const command = agent.command.includes('/') || agent.command.startsWith('~') ? expandPath(agent.command, base) : agent.command;
      options.agents[name] = {
        command,
        args: agent.args ?? [],
        ...(agent.env ? { env: agent.env } : {}),
        ...(agent.prompt !== undefined ? { prompt: agent.prompt } : {}),
      };
    }
  }
  if (approvals) options.approvals = approvals as AcpOptions['approvals'];
  if (on_budget) options.onBudget = on_budget;
  return options;
}

/** The preset name of a named agent. */
export function agentPresetName(name: string): string {
  return `acp:${name}`;
}
