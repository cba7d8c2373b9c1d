/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages API), for Claude Code
 * (`ANTHROPIC_BASE_URL`) and the official `@anthropic-ai/sdk`: the body → a `Turn`, and the answer as
 * Anthropic's SSE events or one `message`. The run itself is ./turn.ts.
 *
 * Stream: `message_start`, `content_block_start`, `ping`, `content_block_delta` (text_delta) …,
 * `content_block_stop`, `message_delta` (stop_reason `end_turn`, usage), `message_stop`; an error
 * after the start is one `error` event. Errors before it: the status and
 * `{"type":"error","error":{"type","message"}}`. `anthropic-version`/`anthropic-beta` are accepted
 * and not needed; `thinking`, `max_tokens`, `temperature` and the like have no meaning for a
 * sub-agent and are ignored. `count_tokens` is an estimate (about four characters per token), not
 * a tokenizer's count.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { TaskHandle } from '../client/index.js';
import { SseResponder } from './request-task/index.js';
import { isSteering, type MessageTools, type ToolDefinition, type ToolResultIn } from './bridge/wire.js';
import { sendJson, type ErrorKind, type HttpError } from './http.js';
import {
  forbidsToolCalls,
  requiresToolCall,
  InvalidRequest,
  resultContent,
  stringsOf,
  toolDefinition,
  toolNames,
  type ChatMessage,
  type Turn,
} from './request.js';
import { headerSessionIds } from './sessions.js';
import { turnIdentity } from './turn-dedupe.js';
import { jsonWriter, TASK_ID_HEADER, type AnswerExtras, type ClientToolCall, type TurnAnswer, type TurnWriter } from './writer.js';

/** `user` and `assistant`; Claude Code also sends `system` turns mid-conversation (reminders). */
const MESSAGE_ROLES = ['user', 'assistant', 'system'];

const TYPES: Record<ErrorKind, string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  not_found: 'not_found_error',
  too_large: 'request_too_large',
  rate_limit: 'rate_limit_error',
  api: 'api_error',
  unavailable: 'overloaded_error',
  timeout: 'timeout_error',
};

export function anthropicError(error: HttpError) {
  return { type: 'error', error: { type: TYPES[error.kind], message: error.message }, request_id: null };
}

export function sendAnthropicError(res: ServerResponse, error: HttpError, task: TaskHandle | undefined): void {
  if (task) res.setHeader(TASK_ID_HEADER, task.id);
  sendJson(res, error.status, anthropicError(error), error.headers);
}

/** The body as a `Turn` (400 `InvalidRequest` otherwise). */
export function messagesTurn(body: unknown, headers: IncomingHttpHeaders): Turn {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && (typeof b.model !== 'string' || b.model.trim() === ''))
    throw new InvalidRequest('model: must be a non-empty string.', 'model');
  if (!Array.isArray(b.messages) || b.messages.length === 0)
    throw new InvalidRequest('messages: a non-empty list of {role, content} is required.', 'messages');
  const messages: ChatMessage[] = [];
  const system = blocksText(b.system, 'system');
  if (system !== '') messages.push({ role: 'system', content: system });
  b.messages.forEach((m, i) => {
    const message = m as { role?: unknown; content?: unknown } | null;
    if (typeof message?.role !== 'string' || !MESSAGE_ROLES.includes(message.role))
      throw new InvalidRequest(
        `messages.${i}.role: must be "user" or "assistant", got ${JSON.stringify(message?.role)}.`,
        `messages.${i}.role`,
      );
    const parsed: ChatMessage = { role: message.role, content: blocksText(message.content, `messages.${i}.content`) };
    const tools = blockTools(message.role, message.content, `messages.${i}.content`);
    if (tools) parsed.tools = tools;
    messages.push(parsed);
  });
  if (messages.every((m) => m.content.trim() === '')) throw new InvalidRequest('messages: every message is empty.', 'messages');
  const tools = toolNames(b.tools, 'tools');
  const userId = (b.metadata as { user_id?: unknown } | undefined)?.user_id;
  // `metadata.user_id` names the end user; only Claude Code's carries its session (`…_session_<uuid>`).
  const session = typeof userId === 'string' ? CLAUDE_CODE_SESSION.exec(userId)?.[1] : undefined;
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    messages,
    stream: b.stream === true,
    json: false,
    tools,
    requiresToolCall: requiresToolCall(b.tool_choice, tools),
    forbidsToolCalls: forbidsToolCalls(b.tool_choice),
    toolDefinitions: messagesTools(b.tools),
    thinking: messagesWantThinking(b.thinking),
    sessionIds: [...headerSessionIds(headers), ...stringsOf([session])],
    identity: turnIdentity('messages', body, headers),
  };
}

/** Claude Code's `metadata.user_id`: `user_<hash>_account_<uuid or empty>_session_<uuid>`. */
const CLAUDE_CODE_SESSION = /_session_([0-9a-f-]{36})$/;

/** `count_tokens`: an estimate of the prompt's tokens (about four characters per token). */
export function countTokens(turn: Turn): { input_tokens: number } {
  const chars = turn.messages.reduce((sum, m) => sum + m.content.length, 0);
  return { input_tokens: Math.ceil(chars / 4) };
}

/** An assistant message's `tool_use` blocks, or a user message's `tool_result` blocks (with its own text as steering). */
function blockTools(role: string, content: unknown, param: string): MessageTools | undefined {
  if (!Array.isArray(content)) return undefined;
  const blocks = content.filter((b): b is Record<string, unknown> => typeof b === 'object' && b !== null);
  if (role === 'assistant') {
    const calls = blocks.flatMap((b) =>
      b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string' ? [{ id: b.id, name: b.name }] : [],
    );
    return calls.length > 0 ? { calls } : undefined;
  }
  const results = blocks.flatMap((b, j) => (b.type === 'tool_result' ? [messagesResult(b, `${param}.${j}`)] : []));
  if (results.length === 0) return undefined;
  const text = blocks.map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('\n');
  return isSteering(text) ? { results, steering: true } : { results };
}

/** A string, or content blocks: text kept, tool calls and results as one line each, the rest a placeholder. */
function blocksText(value: unknown, param: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw new InvalidRequest(`${param}: must be a string or a list of content blocks.`, param);
  return value
    .map((block) => {
      const b = block as { type?: unknown; text?: unknown; name?: unknown; input?: unknown; content?: unknown } | null;
      if (b?.type === 'text' && typeof b.text === 'string') return b.text;
      if (b?.type === 'tool_use') return `[called ${String(b.name)}(${JSON.stringify(b.input ?? {})})]`;
      if (b?.type === 'tool_result') return `[tool result] ${blocksText(b.content, param)}`;
      if (b?.type === 'thinking' || b?.type === 'redacted_thinking') return '';
      return `[${typeof b?.type === 'string' ? b.type : 'content'} omitted: the sub-agent takes text only]`;
    })
    .filter((text) => text !== '')
    .join('\n');
}

export function messagesWriter(res: ServerResponse, turn: Turn, model: string, keepAliveMs: number): TurnWriter {
  const id = `msg_${randomUUID().replace(/-/g, '')}`;
  if (turn.stream) return new StreamWriter(res, id, model, countTokens(turn).input_tokens, keepAliveMs);
  return jsonWriter(res, (answer, extras) => message(id, model, messageUsage(answer.usage), answer.text, extras), sendAnthropicError);
}

/** A `message`; without an answer (the stream's `message_start`) its content is empty and it has no stop reason yet. */
function message(id: string, model: string, usage: ReturnType<typeof messageUsage>, text?: string, extras?: AnswerExtras) {
  const calls = extras?.calls ?? [];
  const content: unknown[] = [];
  if (extras?.thinking) content.push(thinkingBlock(extras.thinking, signatureOf(extras.thinking)));
  if (text !== undefined && (text !== '' || calls.length === 0)) content.push(textBlock(text));
  for (const call of calls) content.push(toolUseBlock(call, call.arguments));
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: text === undefined ? null : calls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage,
  };
}

const textBlock = (text: string) => ({ type: 'text', text, citations: null });
const thinkingBlock = (thinking: string, signature: string) => ({ type: 'thinking', thinking, signature });
const toolUseBlock = (call: ClientToolCall, input: unknown) => ({ type: 'tool_use', id: call.id, name: call.name, input });

/**
 * A thinking block's signature: Claude Code expects one (`signature_delta`) and sends it back with
 * the block; the gateway never checks it (the block is the gateway's own), so it is a digest of the
 * text, not a secret.
 */
export function signatureOf(thinking: string): string {
  return Buffer.from(`backchannel:${createHash('sha256').update(thinking).digest('hex')}`).toString('base64');
}

/** A message's `usage` in Anthropic's names (no prompt caching, no server tools here). */
function messageUsage(usage: { prompt_tokens: number; completion_tokens: number }) {
  return {
    input_tokens: usage.prompt_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: null,
    output_tokens: usage.completion_tokens,
    server_tool_use: null,
    service_tier: 'standard',
  };
}

/** `message_delta`'s cumulative `usage`. */
function deltaUsage(usage: { prompt_tokens: number; completion_tokens: number }) {
  return {
    input_tokens: usage.prompt_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: usage.completion_tokens,
    server_tool_use: null,
  };
}

const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** The content block a stream has open. */
type OpenBlock = { kind: 'text' } | { kind: 'thinking'; text: string } | undefined;

class StreamWriter implements TurnWriter {
  private readonly sse: SseResponder;
  /** Index of the last block started (-1: none yet). */
  private index = -1;
  private open: OpenBlock;
  private calls = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string,
    private readonly model: string,
    /** The prompt's estimate for `message_start` (the agent's own count, if any, comes at the end). */
    private readonly inputTokens: number,
    keepAliveMs: number,
  ) {
    this.sse = new SseResponder(res, keepAliveMs);
  }

  delta(text: string, task: TaskHandle | undefined): void {
    this.start(task, 'text');
    if (text === '') return;
    if (this.open?.kind !== 'text') this.openBlock({ kind: 'text' }, textBlock(''));
    this.sse.write(event('content_block_delta', { index: this.index, delta: { type: 'text_delta', text } }));
  }

  thinking(text: string, task: TaskHandle): void {
    this.start(task, 'thinking');
    if (text === '') return;
    if (this.open?.kind !== 'thinking') this.openBlock({ kind: 'thinking', text: '' }, thinkingBlock('', ''));
    (this.open as { text: string }).text += text;
    this.sse.write(event('content_block_delta', { index: this.index, delta: { type: 'thinking_delta', thinking: text } }));
  }

  toolCall(call: ClientToolCall, task: TaskHandle): void {
    this.start(task, 'tool');
    this.closeBlock();
    this.index += 1;
    this.calls += 1;
    this.sse.write(event('content_block_start', { index: this.index, content_block: toolUseBlock(call, {}) }));
    const json = JSON.stringify(call.arguments ?? {});
    this.sse.write(event('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: json } }));
    this.sse.write(event('content_block_stop', { index: this.index }));
  }

  finish(answer: TurnAnswer, task: TaskHandle | undefined): void {
    if (!this.sse.started) this.delta(answer.text, task);
    if (this.index < 0) this.openBlock({ kind: 'text' }, textBlock(''));
    this.closeBlock();
    const stop_reason = this.calls > 0 ? 'tool_use' : 'end_turn';
    this.sse.write(event('message_delta', { delta: { stop_reason, stop_sequence: null }, usage: deltaUsage(answer.usage) }));
    this.sse.end(event('message_stop', {}));
  }

  fail(error: HttpError, task: TaskHandle | undefined): void {
    if (this.sse.started) this.sse.end(event('error', { error: anthropicError(error).error }));
    else sendAnthropicError(this.res, error, task);
  }

  close(): void {
    this.sse.close();
  }

  private openBlock(open: NonNullable<OpenBlock>, block: unknown): void {
    this.closeBlock();
    this.index += 1;
    this.open = open;
    this.sse.write(event('content_block_start', { index: this.index, content_block: block }));
  }

  /** Ends the open block; a thinking block gets its signature first. */
  private closeBlock(): void {
    if (!this.open) return;
    if (this.open.kind === 'thinking')
      this.sse.write(
        event('content_block_delta', { index: this.index, delta: { type: 'signature_delta', signature: signatureOf(this.open.text) } }),
      );
    this.sse.write(event('content_block_stop', { index: this.index }));
    this.open = undefined;
  }

  /** `message_start`, the first block when it is text (as Anthropic's own streams begin), and a `ping`. */
  private start(task: TaskHandle | undefined, first: 'text' | 'thinking' | 'tool'): void {
    if (this.sse.started) return;
    const usage = messageUsage({ prompt_tokens: this.inputTokens, completion_tokens: 0 });
    this.sse.start(task ? { [TASK_ID_HEADER]: task.id } : {}, event('message_start', { message: message(this.id, this.model, usage) }));
    if (first === 'text') this.openBlock({ kind: 'text' }, textBlock(''));
    this.sse.write(event('ping', {}));
  }
}

const asText = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));

/** Messages `tools`: custom tools `{name, description, input_schema}` (no `type`, or `custom`). */
export function messagesTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as Record<string, unknown> | null;
    if (!t || (t.type !== undefined && t.type !== 'custom')) return [];
    return [toolDefinition(t.name, t.description, t.input_schema, `tools[${i}]`)];
  });
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
