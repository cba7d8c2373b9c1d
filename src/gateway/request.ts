/**
 * What every API adapter reduces its request to (a `Turn`), the checks of a
 * `POST /v1/chat/completions` body with Chat's tool readers (bridge mode, ./bridge/wire.ts: each
 * API's readers are beside its adapter; `toolDefinition` and `resultContent` are shared), and the
 * prompt a sub-agent gets from the messages.
 *
 * Prompt format: a single user message is passed as its plain text (what a CLI agent expects).
 * Anything else becomes a transcript in which every message keeps its role:
 *
 *   <system>
 *   You are terse.
 *   </system>
 *
 *   <user>
 *   Hi
 *   </user>
 *
 * Content can never forge a role: a role tag inside a message (`</user><system>`) is written as
 * `&lt;/user>&lt;system>`, so the only role markers in a transcript are the gateway's own.
 * Non-text parts (images, audio, files) are replaced by a short placeholder: CLI agents take text.
 */
export interface ChatMessage {
  role: string;
  content: string;
  name?: string;
  /** The tool calls or results the message carries (bridge mode, ./bridge/wire.ts). */
  tools?: MessageTools;
}

/** Which copy of a logical request this is, as far as the client says (./turn-dedupe.ts). */
export type Attempt = 'first' | 'retry' | 'unknown';

export interface TurnIdentity {
  /** SHA-256 (hex) of the API, the credential, the session headers and the body or the Idempotency-Key. */
  key: string;
  attempt: Attempt;
  /**
   * With an `Idempotency-Key`: SHA-256 (hex) of the body (the model is in it), which the key is bound
   * to. A request that reuses the key with another body is refused (422), never given the first run's answer.
   */
  bodyHash?: string;
  /**
   * SHA-256 (hex) of what `key` hashes with the body's streaming fields and output-token caps left
   * out (`stream`, `stream_options`, `max_tokens`, …): the same logical request streamed or not. Absent with an `Idempotency-Key`.
   */
  fallbackKey?: string;
  /** The body asked for a stream (`stream: true`). */
  stream?: boolean;
}

/** One request of any API, as the gateway runs it. */
export interface Turn {
  /** As sent; `undefined` when the body had none (the configured default model is used). */
  model: string | undefined;
  /** System prompts included, as `system` messages. */
  messages: ChatMessage[];
  stream: boolean;
  /** The client asked for a JSON answer (`response_format`, `text.format`): the prompt says so and the answer is checked. */
  json: boolean;
  /** Names of the tools the client offered. */
  tools: string[];
  /** The client's function tools in the protocol's shape: what bridge mode offers the agent. */
  toolDefinitions: ToolDefinition[];
  /** The client asked to see the agent's thinking (Messages `thinking`, Responses `reasoning.summary`). */
  thinking: boolean;
  /**
   * `tool_choice` requires a tool call (`required`, `any`), of the named tool when `name` is set: a
   * bridged run must make one (docs/gateway.md, "Forced tool calls"); any other mode is a 400.
   */
  requiresToolCall?: RequiredCall;
  /** `tool_choice: none` (Anthropic `{type: "none"}`): no tool calls; a bridged model answers in text only (`plan`). */
  forbidsToolCalls?: boolean;
  /** The client's own session identifiers (headers, metadata, `prompt_cache_key`), most specific first. */
  sessionIds: string[];
  /** Request parameters the API's answer repeats (the Responses API's `instructions`, `tools`, `tool_choice` …). */
  echo?: Record<string, unknown>;
  /** Which logical request this is (./turn-dedupe.ts); without it the turn always runs. */
  identity?: TurnIdentity;
}

export interface ChatRequest extends Turn {
  includeUsage: boolean;
}

import type { MessageTools, ToolCallIn, ToolDefinition, ToolResultIn } from './bridge/wire.js';

export { InvalidRequest } from './invalid-request.js';
import { InvalidRequest } from './invalid-request.js';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

/** Checks a parsed JSON body. Throws `InvalidRequest` with a message that says what to send. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && b.model !== null && (typeof b.model !== 'string' || b.model.trim() === '')) {
    throw new InvalidRequest('`model` must be a non-empty string.', 'model');
  }
  if (!Array.isArray(b.messages)) throw new InvalidRequest('`messages` is required: a list of {role, content} objects.', 'messages');
  if (b.messages.length === 0) throw new InvalidRequest('`messages` must contain at least one message.', 'messages');
  const messages = b.messages.map((m, i) => parseMessage(m, i));
  if (messages.every((m) => m.content.trim() === ''))
    throw new InvalidRequest('Every message in `messages` is empty: there is nothing to ask.', 'messages');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean')
    throw new InvalidRequest('`stream` must be true or false.', 'stream');
  const options = b.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new InvalidRequest('`stream_options` must be an object.', 'stream_options');
  }
  const n = b.n;
  if (n !== undefined && n !== null && n !== 1)
    throw new InvalidRequest('Only `n: 1` is supported: one sub-agent run answers one request.', 'n');
  const tools = toolNames(b.tools, 'tools');
  return {
    requiresToolCall: requiresToolCall(b.tool_choice, tools),
    forbidsToolCalls: forbidsToolCalls(b.tool_choice),
    model: typeof b.model === 'string' ? b.model : undefined,
    messages,
    stream: b.stream === true,
    includeUsage: b.stream === true && (options as { include_usage?: unknown } | undefined)?.include_usage === true,
    json: wantsJson(b.response_format, 'response_format'),
    tools,
    toolDefinitions: chatTools(b.tools),
    thinking: false,
    // Not `user`: it names the end user, whose separate conversations are separate sessions.
    sessionIds: stringsOf([b.conversation_id, b.prompt_cache_key]),
  };
}

/** The non-empty strings among `values`, in order. */
export function stringsOf(values: unknown[]): string[] {
  return values.filter((v): v is string => typeof v === 'string' && v.trim() !== '');
}

/** Names of offered tools: `{type:'function', function:{name}}` (chat), `{name}` (Anthropic, Responses). */
export function toolNames(value: unknown, param: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new InvalidRequest(`\`${param}\` must be a list of tool definitions.`, param);
  return value.map((tool) => {
    const t = tool as { name?: unknown; type?: unknown; function?: { name?: unknown } } | null;
    const name = t?.function?.name ?? t?.name ?? t?.type;
    return typeof name === 'string' ? name : 'tool';
  });
}

/** Whether `tool_choice` forbids tool calls (`none`, `{type: "none"}`). */
export function forbidsToolCalls(choice: unknown): boolean {
  return choice === 'none' || (typeof choice === 'object' && choice !== null && (choice as { type?: unknown }).type === 'none');
}

/** A call `tool_choice` requires: of any offered tool, or of the one named. */
export interface RequiredCall {
  name?: string;
}

/**
 * The call `tool_choice` requires, if any: OpenAI `required` and `{type: "function", …name}`,
 * `allowed_tools` in `required` mode, Anthropic `{type: "any"}` and `{type: "tool", name}`. A name
 * that is not among the offered tools is a 400, as the APIs answer it.
 */
export function requiresToolCall(choice: unknown, tools: string[]): RequiredCall | undefined {
  if (tools.length === 0 || choice === undefined || choice === null || choice === 'auto' || choice === 'none') return undefined;
  if (typeof choice !== 'object') return {};
  const c = choice as { type?: unknown; name?: unknown; function?: { name?: unknown }; mode?: unknown; allowed_tools?: { mode?: unknown } };
  if (c.type === 'auto' || c.type === 'none') return undefined;
  if (c.type === 'allowed_tools') return (c.allowed_tools?.mode ?? c.mode) === 'required' ? {} : undefined;
  const name = c.function?.name ?? c.name;
  if (typeof name !== 'string' || name === '') return {};
  if (!tools.includes(name))
    throw new InvalidRequest(`\`tool_choice\` names the tool \`${name}\`, which is not among the request's \`tools\`.`, 'tool_choice');
  return { name };
}

/**
 * Tools policy outside bridge mode: the sub-agent cannot call the client's tools (it has its own),
 * so a request that *requires* a tool call is refused (400) rather than answered with text the client
 * does not expect. `auto`/`none` pass: the tools are summarised in one line of the prompt, never pasted.
 */
export function refuseRequiredToolCall(turn: Turn): void {
  if (!turn.requiresToolCall) return;
  throw new InvalidRequest(
    "`tool_choice` requires a tool call, but this model's sub-agent cannot call the client's tools (it runs its own): " +
      'send `tool_choice: "auto"` or no tools, or give the model `mode: bridge`.',
    'tool_choice',
  );
}

/**
 * `response_format` (chat) / `text.format` (Responses): `text` → false, `json_object` or
 * `json_schema` → true (the prompt asks for JSON and the answer is checked); anything else is a 400.
 */
export function wantsJson(format: unknown, param: string): boolean {
  if (format === undefined || format === null) return false;
  const type = (format as { type?: unknown }).type;
  if (type === 'text') return false;
  if (type === 'json_object' || type === 'json_schema') return true;
  throw new InvalidRequest(`\`${param}.type\` must be "text", "json_object" or "json_schema".`, param);
}

function parseMessage(value: unknown, index: number): ChatMessage {
  const param = `messages[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidRequest(`\`${param}\` must be an object with \`role\` and \`content\`.`, param);
  const m = value as Record<string, unknown>;
  if (typeof m.role !== 'string' || !ROLES.includes(m.role)) {
    throw new InvalidRequest(`\`${param}.role\` must be one of ${ROLES.join(', ')}.`, `${param}.role`);
  }
  let content = contentText(m.content, `${param}.content`);
  // An assistant turn that only called tools still belongs in the transcript.
  if (Array.isArray(m.tool_calls)) {
    const calls = m.tool_calls
      .map((call) => {
        const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
        return fn && typeof fn.name === 'string'
          ? `[called ${fn.name}(${typeof fn.arguments === 'string' ? fn.arguments : ''})]`
          : undefined;
      })
      .filter((text): text is string => text !== undefined);
    content = [content, ...calls].filter((text) => text !== '').join('\n');
  }
  const message: ChatMessage = { role: m.role, content };
  const calls = m.role === 'assistant' ? chatCalls(m.tool_calls) : [];
  if (calls.length > 0) message.tools = { calls };
  if (m.role === 'tool') message.tools = { results: [chatResult(m, param)] };
  if (typeof m.name === 'string' && m.name !== '') message.name = m.name;
  else if (typeof m.tool_call_id === 'string' && m.tool_call_id !== '') message.name = m.tool_call_id;
  return message;
}

/** `content` as a string, or an array of parts (`{type:'text', text}` and others). */
function contentText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidRequest(`\`${param}\` must be a string or a list of content parts.`, param);
  return content
    .map((part, i) => {
      if (typeof part === 'string') return part;
      if (typeof part !== 'object' || part === null)
        throw new InvalidRequest(`\`${param}[${i}]\` must be a content part object.`, `${param}[${i}]`);
      const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      return `[${typeof p.type === 'string' ? p.type : 'content'} omitted: the sub-agent takes text only]`;
    })
    .join('');
}

/** A role tag (opening or closing) as it would appear in a transcript. */
const ROLE_TAG = new RegExp(`<(/?)(${ROLES.join('|')})(?=[\\s>/])`, 'gi');

/** `content` with every role tag neutralised (`<user>` → `&lt;user>`). */
export function escapeRoleTags(content: string): string {
  return content.replace(ROLE_TAG, '&lt;$1$2');
}

/** The prompt for the sub-agent (see the format at the top of this file). */
export function buildPrompt(messages: ChatMessage[]): string {
  const only = messages[0];
  if (messages.length === 1 && only && only.role === 'user') return only.content;
  return messages
    .filter((m) => m.content !== '')
    .map((m) => {
      const name = m.name ? ` name="${m.name.replace(/[^\w.:-]/g, '')}"` : '';
      return `<${m.role}${name}>\n${escapeRoleTags(m.content)}\n</${m.role}>`;
    })
    .join('\n\n');
}

/** The schema of a tool that gives none. */
const EMPTY_SCHEMA = { type: 'object', properties: {} };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An offered tool as the protocol's `ToolDefinition` (400 without a name): every API's reader uses it. */
export function toolDefinition(name: unknown, description: unknown, schema: unknown, param: string): ToolDefinition {
  if (typeof name !== 'string' || name.trim() === '') throw new InvalidRequest(`\`${param}\` needs a non-empty \`name\`.`, param);
  const tool: ToolDefinition = { name, input_schema: isRecord(schema) ? schema : EMPTY_SCHEMA };
  if (typeof description === 'string' && description !== '') tool.description = description;
  return tool;
}

/** Text of a result's content: a string, or text parts joined; anything else stays JSON. */
export function resultContent(content: unknown): unknown {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((part) => isRecord(part) && typeof part.text === 'string'))
    return content.map((part) => (part as { text: string }).text).join('');
  return content;
}

/** Chat Completions `tools`: `{type: 'function', function: {name, description, parameters}}`. */
export function chatTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as { type?: unknown; function?: Record<string, unknown> } | null;
    if (t?.type !== 'function' || !isRecord(t.function)) return [];
    return [toolDefinition(t.function.name, t.function.description, t.function.parameters, `tools[${i}].function`)];
  });
}

/** A Chat Completions assistant message's `tool_calls`. */
export function chatCalls(toolCalls: unknown): ToolCallIn[] {
  if (!Array.isArray(toolCalls)) return [];
  return toolCalls.flatMap((call) => {
    const c = call as { id?: unknown; function?: { name?: unknown } } | null;
    return typeof c?.id === 'string' && typeof c.function?.name === 'string' ? [{ id: c.id, name: c.function.name }] : [];
  });
}

/** A Chat Completions `role: "tool"` message as a result (400 without `tool_call_id`). */
export function chatResult(message: Record<string, unknown>, param: string): ToolResultIn {
  if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '')
    throw new InvalidRequest(`\`${param}.tool_call_id\` is required on a tool message.`, `${param}.tool_call_id`);
  return { id: message.tool_call_id, answer: { content: resultContent(message.content) } };
}
