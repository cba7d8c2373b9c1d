/**
 * The tool side of the three model APIs, read from a request body (bridge mode, docs/gateway.md):
 * which tools the client offers (as the protocol's `ToolDefinition`s), which tool calls its history
 * shows, which tool results it sends back, and whether it asked to see thinking.
 *
 * Guarantees:
 * - only function tools are offered (Chat `function`, Responses `function`, Messages custom tools);
 *   a provider's own server tools (web search, code interpreter …) are not the client's to run;
 * - a result's content goes through whole (no truncation), as a string when it is text and as the
 *   client's JSON otherwise; an error result (`is_error`) is an error answer;
 * - a tool-results turn that also carries text of the user's own (anything but Claude Code's
 *   `<system-reminder>` blocks) is marked `steering`: it is not a plain continuation.
 */
import { InvalidRequest } from '../invalid-request.js';

/** A tool the client offers, in the protocol's shape (docs/protocol.md, "Tool calls"). */
export interface ToolDefinition {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** A tool call the client's history shows the assistant making. */
export interface ToolCallIn {
  id: string;
  name: string;
}

/** A tool result the client sends back for call `id`. */
export interface ToolResultIn {
  id: string;
  answer: { content: unknown } | { error: string };
}

/** What a message of the transcript is to bridge mode. */
export interface MessageTools {
  calls?: ToolCallIn[];
  results?: ToolResultIn[];
  /** A results turn with text of its own (not a plain continuation). */
  steering?: boolean;
}

/** Claude Code's reminders, which it adds to tool-result turns by itself. */
const SYSTEM_REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

/** `text` without Claude Code's own reminders. */
export function withoutReminders(text: string): string {
  return text.replace(SYSTEM_REMINDER, '');
}

/** Whether `text` says anything beyond Claude Code's own reminders. */
export function isSteering(text: string): boolean {
  return withoutReminders(text).trim() !== '';
}

const EMPTY_SCHEMA = { type: 'object', properties: {} };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function definition(name: unknown, description: unknown, schema: unknown, param: string): ToolDefinition {
  if (typeof name !== 'string' || name.trim() === '') throw new InvalidRequest(`\`${param}\` needs a non-empty \`name\`.`, param);
  const tool: ToolDefinition = { name, input_schema: isObject(schema) ? schema : EMPTY_SCHEMA };
  if (typeof description === 'string' && description !== '') tool.description = description;
  return tool;
}

/** Chat Completions `tools`: `{type: 'function', function: {name, description, parameters}}`. */
export function chatTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as { type?: unknown; function?: Record<string, unknown> } | null;
    if (t?.type !== 'function' || !isObject(t.function)) return [];
    return [definition(t.function.name, t.function.description, t.function.parameters, `tools[${i}].function`)];
  });
}

/** Responses `tools`: `{type: 'function', name, description, parameters}`. */
export function responsesTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as Record<string, unknown> | null;
    if (t?.type !== 'function') return [];
    return [definition(t.name, t.description, t.parameters, `tools[${i}]`)];
  });
}

/** Messages `tools`: custom tools `{name, description, input_schema}` (no `type`, or `custom`). */
export function messagesTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as Record<string, unknown> | null;
    if (!t || (t.type !== undefined && t.type !== 'custom')) return [];
    return [definition(t.name, t.description, t.input_schema, `tools[${i}]`)];
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

/** Text of a result's content: a string, or text parts joined; anything else stays JSON. */
function resultContent(content: unknown): unknown {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((part) => isObject(part) && typeof part.text === 'string'))
    return content.map((part) => (part as { text: string }).text).join('');
  return content;
}

const asText = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));

/** A Chat Completions `role: "tool"` message as a result (400 without `tool_call_id`). */
export function chatResult(message: Record<string, unknown>, param: string): ToolResultIn {
  if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '')
    throw new InvalidRequest(`\`${param}.tool_call_id\` is required on a tool message.`, `${param}.tool_call_id`);
  return { id: message.tool_call_id, answer: { content: resultContent(message.content) } };
}

/** A Responses `function_call_output` item as a result. */
export function responsesResult(item: Record<string, unknown>, param: string): ToolResultIn {
  if (typeof item.call_id !== 'string' || item.call_id === '')
    throw new InvalidRequest(`\`${param}.call_id\` is required on a function_call_output item.`, `${param}.call_id`);
  return { id: item.call_id, answer: { content: resultContent(item.output) } };
}

/** A Messages `tool_result` block as a result; `is_error` makes it an error answer. */
export function messagesResult(block: Record<string, unknown>, param: string): ToolResultIn {
  if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '')
    throw new InvalidRequest(`${param}.tool_use_id: required on a tool_result block.`, `${param}.tool_use_id`);
  const content = resultContent(block.content);
  return { id: block.tool_use_id, answer: block.is_error === true ? { error: asText(content) } : { content } };
}

/** Messages: the client asked for thinking (`thinking: {type: "enabled" | "adaptive"}`). */
export function messagesWantThinking(thinking: unknown): boolean {
  const type = (thinking as { type?: unknown } | null)?.type;
  return type === 'enabled' || type === 'adaptive';
}

/** Responses: the client asked for reasoning summaries (`reasoning.summary` set, not `none`). */
export function responsesWantReasoning(reasoning: unknown): boolean {
  const summary = (reasoning as { summary?: unknown } | null)?.summary;
  return typeof summary === 'string' && summary !== 'none';
}
