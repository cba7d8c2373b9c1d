/**
 * The adapter's settings: the `BACKCHANNEL_ACP` environment variable (JSON) the broker's acp task kind
 * writes, read once and deleted so the agent child never sees it. Absent or `{}` means the defaults:
 * door "control", reads and searches allowed, everything else asked, onBudget "pause", no terminal.
 */
import * as z from 'zod/mini';
import { APPROVAL_DECISIONS, DEFAULT_APPROVALS, TOOL_KINDS, type ApprovalDecision, type ToolKind } from '../protocol/acp-settings.js';
import { SETTINGS_VARIABLE } from './agent-env.js';

export { SETTINGS_VARIABLE };

export { TOOL_KINDS, type ToolKind };
export type Policy = ApprovalDecision;

/** No `initialize` answer in this long fails the task: an agent that hangs at start must not hold a slot. */
export const DEFAULT_INIT_TIMEOUT_MS = 30_000;

const POLICY = z.enum(APPROVAL_DECISIONS);
const positive = () => z.number().check(z.positive());
const MCP_SERVER = z.object({
  command: z.string(),
  args: z.optional(z.array(z.string())),
  env: z.optional(z.record(z.string(), z.string())),
});

const SETTINGS = z.object({
  door: z.optional(z.string()),
  approvals: z.optional(z.partialRecord(z.enum(TOOL_KINDS), POLICY)),
  onBudget: z.optional(z.enum(['pause', 'stop'])),
  maxCostUsd: z.optional(positive()),
  maxTokens: z.optional(positive()),
  terminal: z.optional(z.boolean()),
  session: z.optional(z.object({ id: z.string().check(z.minLength(1)), transcript: z.optional(z.array(z.unknown())) })),
  agentName: z.optional(z.string()),
  bridge: z.optional(z.object({ mcpServer: MCP_SERVER })),
  initTimeoutMs: z.optional(positive()),
});

export interface AcpSettings {
  door: string;
  approvals: Record<ToolKind, Policy>;
  onBudget: 'pause' | 'stop';
  maxCostUsd?: number;
  maxTokens?: number;
  terminal: boolean;
  session?: { id: string; transcript?: unknown[] };
  agentName?: string;
  bridge?: { mcpServer: z.infer<typeof MCP_SERVER> };
  initTimeoutMs: number;
}

export { DEFAULT_APPROVALS };

export class SettingsError extends Error {
  override readonly name = 'SettingsError';
}

/** Parses the settings (one-line error on a bad value); `raw` undefined or '' means the defaults. */
export function parseSettings(raw: string | undefined): AcpSettings {
  let value: unknown = {};
  if (raw !== undefined && raw.trim() !== '') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new SettingsError(`${SETTINGS_VARIABLE} is not JSON`);
    }
  }
  const parsed = SETTINGS.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'the value';
    throw new SettingsError(`${SETTINGS_VARIABLE}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  const s = parsed.data;
  return {
    door: s.door ?? 'control',
    approvals: { ...DEFAULT_APPROVALS, ...s.approvals },
    onBudget: s.onBudget ?? 'pause',
    ...(s.maxCostUsd !== undefined ? { maxCostUsd: s.maxCostUsd } : {}),
    ...(s.maxTokens !== undefined ? { maxTokens: s.maxTokens } : {}),
    terminal: s.terminal ?? false,
    ...(s.session ? { session: s.session } : {}),
    ...(s.agentName !== undefined ? { agentName: s.agentName } : {}),
    ...(s.bridge ? { bridge: s.bridge } : {}),
    initTimeoutMs: s.initTimeoutMs ?? DEFAULT_INIT_TIMEOUT_MS,
  };
}

/** Reads the settings from `env` and deletes them from it, so the agent child does not inherit them. */
export function takeSettings(env: NodeJS.ProcessEnv = process.env): AcpSettings {
  const raw = env[SETTINGS_VARIABLE];
  delete env[SETTINGS_VARIABLE];
  return parseSettings(raw);
}

/** A tool kind as the policy knows it (an agent's unknown kind counts as `other`). */
export function toolKind(kind: unknown): ToolKind {
  return typeof kind === 'string' && (TOOL_KINDS as readonly string[]).includes(kind) ? (kind as ToolKind) : 'other';
}
