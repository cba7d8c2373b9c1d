/**
 * Which sub-agent answers a model name, and the broker task spec for one request.
 *
 * A model name resolves to, in order: a model from the config; one of the Cursor CLI's own models
 * (run through the cursor-cli template with `--model <name>`) when `list_cli_models` is on; else
 * nothing (404).
 *
 * What an agent receives as its task input:
 *   cursor-cli / claude-code template: `{prompt, model?, allow_writes, resume?}` (their documented input; the
 *     CLI's path goes in the environment, CURSOR_AGENT_BIN, never in input);
 *   a configured command: `{prompt, messages, allow_writes, model?, gateway_model, resume?}` — the prompt
 *     built from `messages`, the messages themselves for agents that want the roles.
 * `model` is only set when the config maps one (`cli_model`): the name a client asked for is the
 * gateway's route, not the agent's model (it goes in `gateway_model`). Writes are off unless the
 * route's `allow_writes` says otherwise.
 */
import type { RunRule } from '../client/index.js';
import type { WorktreeRequest } from '../model/change.js';
import type { TaskSpec } from '../model/task.js';
import { builtInAgentPath, type GatewayConfig, type ModelRoute } from './config.js';
import type { ChatMessage } from './request.js';
import { withoutReminders } from './bridge/wire.js';
import { withAcp } from './acp-model.js';

/** Longest label shown in the panel for a request. */
const LABEL_PROMPT_CHARS = 60;

export function routeFor(config: GatewayConfig, model: string, cliModels: readonly string[]): ModelRoute | undefined {
  if (Object.hasOwn(config.models, model)) return config.models[model];
  if (config.listCliModels && cliModels.includes(model)) return { kind: 'cursor-cli', cliModel: model, allowWrites: false, env: {} };
  return undefined;
}

/** A model request, routed: what taskSpecFor turns into the task's spec (the running task is a RequestTask). */
export interface RoutedRequest {
  model: string;
  route: ModelRoute;
  prompt: string;
  messages: ChatMessage[];
  stream: boolean;
  /** The agent's own session id to resume (from the gateway's session registry). */
  resume?: string;
  /** Working directory (a session's workspace), else the route's or the config's. */
  cwd?: string;
  /** The session's worktree (a `worktree: true` route): a new one from the base, or the turn before's (`reuse`). */
  worktree?: WorktreeRequest;
  /** Extra tags (the API, the hashed session key). */
  tags?: Record<string, string>;
}

/**
 * The configured `command` models as run-policy rules, for a broker of the gateway's own (a hub reads
 * them from the config file itself). The built-in models run the shipped templates, which are presets.
 */
export function modelRunRules(config: GatewayConfig): RunRule[] {
  return Object.entries(config.models).flatMap(([name, route]) =>
    route.kind === 'command'
      ? [{ name: `gateway model ${name}`, command: route.command, args: route.args, origins: ['gateway' as const] }]
      : [],
  );
}

/**
 * What the user last asked, for the task's label: the last user message with words of the user's
 * own, without the blocks a client adds by itself (Claude Code's `<system-reminder>`s) and without
 * tool results; undefined when there is none.
 */
export function userPrompt(messages: readonly ChatMessage[]): string | undefined {
  for (const message of [...messages].reverse()) {
    if (message.role !== 'user' || (message.tools?.results && !message.tools.steering)) continue;
    const text = withoutReminders(message.content).trim();
    if (text !== '') return text;
  }
  return undefined;
}

export function taskSpecFor(config: GatewayConfig, request: RoutedRequest): TaskSpec {
  const { route } = request;
  const oneLine = (userPrompt(request.messages) ?? request.prompt).replace(/\s+/g, ' ').trim();
  const label = `gateway ${request.model}: ${oneLine.length > LABEL_PROMPT_CHARS ? `${oneLine.slice(0, LABEL_PROMPT_CHARS)}…` : oneLine}`;
  const common = {
    cwd: request.cwd ?? route.cwd ?? config.workspace,
    env: route.env,
    label,
    // One request, one run: a retry would re-spend tokens the client never sees (it retries itself).
    retries: 0,
    tags: { source: 'gateway', model: request.model, stream: String(request.stream), ...request.tags },
    origin: 'gateway' as const,
    // The model's `budget:` (the broker stops a task over it: budget_exceeded).
    ...route.budget,
    // In a worktree the agent starts in the same subdirectory of it as `cwd` is of the repository.
    ...(request.worktree ? { worktree: request.worktree } : {}),
  };
  const input: Record<string, unknown> = { prompt: request.prompt, allow_writes: route.allowWrites };
  if (route.cliModel) input.model = route.cliModel;
  if (request.resume) input.resume = request.resume;
  if (route.kind === 'command') {
    Object.assign(input, { messages: request.messages, gateway_model: request.model });
    return withAcp(route, { ...common, command: route.command, args: route.args, input });
  }
  // The template takes its program from the owner's configuration (its environment), never from input.
  const env = route.kind === 'cursor-cli' ? { ...route.env, CURSOR_AGENT_BIN: config.cursorCliPath } : route.env;
  return { ...common, env, command: builtInAgentPath(route.kind), args: [], input };
}
