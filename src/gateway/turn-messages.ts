/**
 * What the sub-agent is told: the client's messages as it gets them (long client system prompts
 * summarised or dropped, one line naming the client's tools, the topology in bridge mode, a call
 * `tool_choice` requires, the JSON instruction), and the part of a transcript a resumed session has
 * not seen.
 */
import { LONG_SYSTEM_PROMPT_CHARS, type GatewayConfig, type ModelMode } from './config.js';
import type { ChatMessage, RequiredCall, Turn } from './request.js';
import { topology, type HostEnv } from './bridge/anchor.js';

/** The messages after the last assistant message: what a resumed agent session has not seen. */
export function newTurn(messages: ChatMessage[]): ChatMessage[] {
  const last = messages.map((m) => m.role).lastIndexOf('assistant');
  const rest = messages.slice(last + 1).filter((m) => m.role !== 'system' && m.role !== 'developer');
  return rest.length > 0 ? rest : messages;
}

/**
 * The messages as the sub-agent gets them: long client system prompts summarised (`auto`) or
 * dropped, one line naming the client's tools (never their definitions), and the JSON instruction.
 */
export function prepareMessages(
  messages: ChatMessage[],
  turn: Turn,
  config: GatewayConfig,
  bridge: { mode: ModelMode; env?: HostEnv | undefined; workspace?: string } = { mode: 'agent' },
): ChatMessage[] {
  const policy = config.clientSystemPrompt;
  const out = messages
    .filter((m) => policy !== 'drop' || (m.role !== 'system' && m.role !== 'developer'))
    .map((m) =>
      policy === 'auto' && (m.role === 'system' || m.role === 'developer') && m.content.length > LONG_SYSTEM_PROMPT_CHARS
        ? {
            ...m,
            content: `[The client's ${m.role} prompt (${m.content.length} characters, about its own tools and conventions) is left out.]`,
          }
        : m,
    );
  const notes: string[] = [];
  if (bridge.mode === 'bridge') {
    const where = topology(bridge.env, bridge.workspace);
    notes.push(`Use the client's tools (${turn.toolDefinitions.map((t) => t.name).join(', ')}) for files and commands. ${where}`);
    if (turn.requiresToolCall) notes.push(requiredCallNote(turn.requiresToolCall));
    out.push({ role: 'system', content: where });
  } else if (bridge.mode === 'plan') notes.push('Answer in text only: do not call tools, run commands or change files.');
  else if (turn.tools.length > 0)
    notes.push(`The client offered tools you cannot call (${turn.tools.slice(0, 20).join(', ')}); use your own tools instead.`);
  if (turn.json) notes.push('Answer with one valid JSON value only: no prose, no code fences.');
  if (notes.length > 0) out.unshift({ role: 'system', content: notes.join('\n') });
  return out;
}

/** What the agent is told of a call the client's `tool_choice` requires. */
export function requiredCallNote(required: RequiredCall): string {
  const call = required.name === undefined ? "one of the client's tools" : `the client's tool \`${required.name}\``;
  return `The client requires a tool call now (tool_choice): call ${call} before anything else; an answer without it fails.`;
}
