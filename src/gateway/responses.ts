/**
 * `POST /v1/responses` (OpenAI Responses API), for Codex (`wire_api = "responses"`) and the official
 * `openai` client: the body → a `Turn`, and the answer as Responses stream events or one `response`
 * object. The run itself is ./turn.ts.
 *
 * Stream: `response.created`, `response.in_progress`, `response.output_item.added`,
 * `response.content_part.added`, `response.output_text.delta` …, `response.output_text.done`,
 * `response.content_part.done`, `response.output_item.done`, `response.completed` (with usage); a
 * failure after the start is `response.failed`. Every event carries `sequence_number`.
 * `instructions` become the system prompt; `previous_response_id` is not stored (`store` is ignored):
 * a client that relies on it gets a 400 saying to send the whole input.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { TaskHandle } from '../client/index.js';
import { SseResponder } from './request-task/index.js';
import { sendJson, type HttpError } from './http.js';
import type { ToolDefinition, ToolResultIn } from './bridge/wire.js';
import { openAIError, responsesUsage } from './openai-shapes.js';
import {
  forbidsToolCalls,
  requiresToolCall,
  InvalidRequest,
  resultContent,
  stringsOf,
  toolDefinition,
  toolNames,
  wantsJson,
  type ChatMessage,
  type Turn,
} from './request.js';
import { headerSessionIds } from './sessions.js';
import { turnIdentity } from './turn-dedupe.js';
import { jsonWriter, TASK_ID_HEADER, type AnswerExtras, type ClientToolCall, type TurnAnswer, type TurnWriter } from './writer.js';

const ROLES = ['user', 'assistant', 'system', 'developer'];

/** The body as a `Turn` (400 `InvalidRequest` otherwise). */
export function responsesTurn(body: unknown, headers: IncomingHttpHeaders): Turn {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && (typeof b.model !== 'string' || b.model.trim() === ''))
    throw new InvalidRequest('`model` must be a non-empty string.', 'model');
  if (typeof b.previous_response_id === 'string')
    throw new InvalidRequest('This gateway stores no responses: send the whole conversation in `input`.', 'previous_response_id');
  const messages: ChatMessage[] = [];
  if (typeof b.instructions === 'string' && b.instructions !== '') messages.push({ role: 'system', content: b.instructions });
  if (typeof b.input === 'string') messages.push({ role: 'user', content: b.input });
  else if (Array.isArray(b.input)) b.input.forEach((item, i) => itemMessage(item, i, messages));
  else throw new InvalidRequest('`input` is required: a string or a list of input items.', 'input');
  if (messages.every((m) => m.content.trim() === '')) throw new InvalidRequest('`input` is empty: there is nothing to ask.', 'input');
  const tools = toolNames(b.tools, 'tools');
  const format = (b.text as { format?: unknown } | undefined)?.format;
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    messages,
    stream: b.stream === true,
    json: wantsJson(format, 'text.format'),
    tools,
    requiresToolCall: requiresToolCall(b.tool_choice, tools),
    forbidsToolCalls: forbidsToolCalls(b.tool_choice),
    toolDefinitions: responsesTools(b.tools),
    thinking: responsesWantReasoning(b.reasoning),
    // Not `user`: it names the end user, whose separate conversations are separate sessions.
    sessionIds: [...headerSessionIds(headers), ...stringsOf([b.conversation, b.prompt_cache_key])],
    echo: echoOf(b),
    identity: turnIdentity('responses', body, headers),
  };
}

/**
 * The request's parameters as a `response` object repeats them (the SDKs' `Response` requires
 * `tools`, `tool_choice`, `parallel_tool_calls`, `instructions`, `temperature`, `top_p`, `metadata`):
 * what the client sent, else the API's defaults.
 */
function echoOf(b: Record<string, unknown>): Record<string, unknown> {
  const given = <T>(value: unknown, is: (v: unknown) => boolean, fallback: T) => (is(value) ? value : fallback);
  const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  return {
    instructions: given(b.instructions, (v) => typeof v === 'string', null),
    max_output_tokens: given(b.max_output_tokens, isNumber, null),
    metadata: given(b.metadata, isObject, {}),
    parallel_tool_calls: given(b.parallel_tool_calls, (v) => typeof v === 'boolean', true),
    previous_response_id: null,
    temperature: given(b.temperature, isNumber, null),
    text: given(b.text, (v) => isObject(v) && isObject((v as { format?: unknown }).format), { format: { type: 'text' } }),
    tool_choice: given(b.tool_choice, (v) => typeof v === 'string' || isObject(v), 'auto'),
    tools: given(b.tools, Array.isArray, []),
    top_p: given(b.top_p, isNumber, null),
    truncation: given(b.truncation, (v) => v === 'auto' || v === 'disabled', 'disabled'),
  };
}

function itemMessage(item: unknown, index: number, out: ChatMessage[]): void {
  const param = `input[${index}]`;
  const i = item as { type?: unknown; role?: unknown; content?: unknown; name?: unknown; arguments?: unknown; output?: unknown };
  if (typeof item !== 'object' || item === null) throw new InvalidRequest(`\`${param}\` must be an input item object.`, param);
  if (i.type === 'function_call' || i.type === 'custom_tool_call' || i.type === 'local_shell_call') {
    const message: ChatMessage = {
      role: 'assistant',
      content: `[called ${String(i.name ?? i.type)}(${typeof i.arguments === 'string' ? i.arguments : ''})]`,
    };
    const callId = (item as { call_id?: unknown }).call_id;
    if (typeof callId === 'string' && typeof i.name === 'string') message.tools = { calls: [{ id: callId, name: i.name }] };
    out.push(message);
  } else if (i.type === 'function_call_output' || i.type === 'custom_tool_call_output') {
    const message: ChatMessage = { role: 'tool', content: typeof i.output === 'string' ? i.output : JSON.stringify(i.output ?? '') };
    if (i.type === 'function_call_output') message.tools = { results: [responsesResult(item as Record<string, unknown>, param)] };
    out.push(message);
  } else if (i.type === undefined || i.type === 'message') {
    if (typeof i.role !== 'string' || !ROLES.includes(i.role))
      throw new InvalidRequest(`\`${param}.role\` must be one of ${ROLES.join(', ')}.`, `${param}.role`);
    out.push({ role: i.role, content: partsText(i.content, `${param}.content`) });
  }
  // Reasoning items and other non-text state are the client's own: left out.
}

function partsText(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidRequest(`\`${param}\` must be a string or a list of content parts.`, param);
  return content
    .map((part) => {
      const p = part as { type?: unknown; text?: unknown } | null;
      if (typeof p?.text === 'string' && (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text')) return p.text;
      return `[${typeof p?.type === 'string' ? p.type : 'content'} omitted: the sub-agent takes text only]`;
    })
    .join('');
}

export function responsesWriter(res: ServerResponse, turn: Turn, model: string, keepAliveMs: number): TurnWriter {
  const ids = { response: `resp_${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000) };
  const echo = turn.echo ?? {};
  if (turn.stream) return new StreamWriter(res, ids, model, echo, keepAliveMs);
  return jsonWriter(
    res,
    (answer, extras) => response(ids, model, echo, 'completed', itemsOf(answer.text, extras), answer),
    sendResponsesError,
  );
}

interface Ids {
  response: string;
  /** Unix seconds. */
  created: number;
}

const itemId = (prefix: string) => `${prefix}_${randomUUID().replace(/-/g, '')}`;

function messageItem(id: string, text: string | undefined) {
  return {
    id,
    type: 'message',
    status: text === undefined ? 'in_progress' : 'completed',
    role: 'assistant',
    content: text === undefined ? [] : [{ type: 'output_text', text, annotations: [] }],
  };
}

function reasoningItem(id: string, text: string | undefined) {
  return { id, type: 'reasoning', summary: text === undefined ? [] : [{ type: 'summary_text', text }] };
}

function functionCallItem(id: string, call: ClientToolCall, done: boolean) {
  return {
    id,
    type: 'function_call',
    status: done ? 'completed' : 'in_progress',
    arguments: done ? JSON.stringify(call.arguments ?? {}) : '',
    call_id: call.id,
    name: call.name,
  };
}

/** A non-streamed answer's output items: reasoning (if any), the message (if it has text, or nothing else), the calls. */
function itemsOf(text: string, extras: AnswerExtras): unknown[] {
  const items: unknown[] = [];
  if (extras.thinking) items.push(reasoningItem(itemId('rs'), extras.thinking));
  if (text !== '' || extras.calls.length === 0) items.push(messageItem(itemId('msg'), text));
  for (const call of extras.calls) items.push(functionCallItem(itemId('fc'), call, true));
  return items;
}

/**
 * A `response` object; `usage` only once known (the SDKs' type has no `null` for it). No `output_text`:
 * the API has none on the wire, the SDKs compute it from `output`.
 */
function response(
  ids: Ids,
  model: string,
  echo: Record<string, unknown>,
  status: string,
  output: unknown[],
  answer?: TurnAnswer,
  error?: HttpError,
) {
  const usage = answer && responsesUsage(answer.usage);
  return {
    id: ids.response,
    object: 'response',
    created_at: ids.created,
    status,
    background: false,
    completed_at: status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error: error ? { code: error.kind === 'rate_limit' ? 'rate_limit_exceeded' : 'server_error', message: error.message } : null,
    incomplete_details: null,
    model,
    output,
    ...echo,
    ...(usage ? { usage } : {}),
  };
}

/** The output item a stream has open: the message (its text so far) or the reasoning (its summary so far). */
type OpenItem = { kind: 'message' | 'reasoning'; id: string; index: number; text: string } | undefined;

class StreamWriter implements TurnWriter {
  private readonly sse: SseResponder;
  private sequence = 0;
  /** The items done so far, in order (the `response.completed` output). */
  private readonly output: unknown[] = [];
  private open: OpenItem;

  constructor(
    private readonly res: ServerResponse,
    private readonly ids: Ids,
    private readonly model: string,
    private readonly echo: Record<string, unknown>,
    keepAliveMs: number,
  ) {
    this.sse = new SseResponder(res, keepAliveMs);
  }

  delta(text: string, task: TaskHandle | undefined): void {
    this.start(task);
    if (text === '') return;
    const item = this.item('message');
    item.text += text;
    this.sse.write(this.event('response.output_text.delta', { ...this.where(item), delta: text, logprobs: [] }));
  }

  thinking(text: string, task: TaskHandle): void {
    this.start(task);
    if (text === '') return;
    const item = this.item('reasoning');
    item.text += text;
    this.sse.write(this.event('response.reasoning_summary_text.delta', { ...this.summary(item), delta: text }));
  }

  toolCall(call: ClientToolCall, task: TaskHandle): void {
    this.start(task);
    this.closeItem();
    const id = itemId('fc');
    const output_index = this.output.length;
    const args = JSON.stringify(call.arguments ?? {});
    this.sse.write(this.event('response.output_item.added', { output_index, item: functionCallItem(id, call, false) }));
    this.sse.write(this.event('response.function_call_arguments.delta', { item_id: id, output_index, delta: args }));
    this.sse.write(this.event('response.function_call_arguments.done', { item_id: id, output_index, name: call.name, arguments: args }));
    const done = functionCallItem(id, call, true);
    this.output.push(done);
    this.sse.write(this.event('response.output_item.done', { output_index, item: done }));
  }

  finish(answer: TurnAnswer, task: TaskHandle | undefined): void {
    this.start(task);
    if (this.output.length === 0 && this.open === undefined) this.item('message');
    if (this.open?.kind === 'message' && this.open.text === '' && answer.text !== '') this.delta(answer.text, task);
    this.closeItem();
    this.sse.end(
      this.event('response.completed', { response: response(this.ids, this.model, this.echo, 'completed', this.output, answer) }),
    );
  }

  fail(error: HttpError, task: TaskHandle | undefined): void {
    if (this.sse.started)
      this.sse.end(
        this.event('response.failed', { response: response(this.ids, this.model, this.echo, 'failed', this.output, undefined, error) }),
      );
    else sendResponsesError(this.res, error, task);
  }

  close(): void {
    this.sse.close();
  }

  /** The open item of this kind, opened (and the other closed) when needed. */
  private item(kind: 'message' | 'reasoning'): NonNullable<OpenItem> {
    if (this.open?.kind === kind) return this.open;
    this.closeItem();
    const open = { kind, id: itemId(kind === 'message' ? 'msg' : 'rs'), index: this.output.length, text: '' };
    this.open = open;
    if (kind === 'message') {
      this.sse.write(this.event('response.output_item.added', { output_index: open.index, item: messageItem(open.id, undefined) }));
      this.sse.write(
        this.event('response.content_part.added', { ...this.where(open), part: { type: 'output_text', text: '', annotations: [] } }),
      );
    } else {
      this.sse.write(this.event('response.output_item.added', { output_index: open.index, item: reasoningItem(open.id, undefined) }));
      this.sse.write(
        this.event('response.reasoning_summary_part.added', { ...this.summary(open), part: { type: 'summary_text', text: '' } }),
      );
    }
    return open;
  }

  private closeItem(): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    if (open.kind === 'message') {
      const part = { type: 'output_text', text: open.text, annotations: [] };
      this.sse.write(this.event('response.output_text.done', { ...this.where(open), text: open.text, logprobs: [] }));
      this.sse.write(this.event('response.content_part.done', { ...this.where(open), part }));
      const item = messageItem(open.id, open.text);
      this.output.push(item);
      this.sse.write(this.event('response.output_item.done', { output_index: open.index, item }));
    } else {
      this.sse.write(this.event('response.reasoning_summary_text.done', { ...this.summary(open), text: open.text }));
      this.sse.write(
        this.event('response.reasoning_summary_part.done', { ...this.summary(open), part: { type: 'summary_text', text: open.text } }),
      );
      const item = reasoningItem(open.id, open.text);
      this.output.push(item);
      this.sse.write(this.event('response.output_item.done', { output_index: open.index, item }));
    }
  }

  private where(item: NonNullable<OpenItem>) {
    return { item_id: item.id, output_index: item.index, content_index: 0 };
  }

  private summary(item: NonNullable<OpenItem>) {
    return { item_id: item.id, output_index: item.index, summary_index: 0 };
  }

  private event(type: string, data: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.sequence++, ...data })}\n\n`;
  }

  /** `response.created` and `response.in_progress`; the items follow as they come. */
  private start(task: TaskHandle | undefined): void {
    if (this.sse.started) return;
    const created = response(this.ids, this.model, this.echo, 'in_progress', []);
    const first = this.event('response.created', { response: created }) + this.event('response.in_progress', { response: created });
    this.sse.start(task ? { [TASK_ID_HEADER]: task.id } : {}, first);
  }
}

export function sendResponsesError(res: ServerResponse, error: HttpError, task: TaskHandle | undefined): void {
  if (task) res.setHeader(TASK_ID_HEADER, task.id);
  sendJson(res, error.status, openAIError(error), error.headers);
}

/** Responses `tools`: `{type: 'function', name, description, parameters}`. */
export function responsesTools(tools: unknown): ToolDefinition[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool, i) => {
    const t = tool as Record<string, unknown> | null;
    if (t?.type !== 'function') return [];
    return [toolDefinition(t.name, t.description, t.parameters, `tools[${i}]`)];
  });
}

/** A Responses `function_call_output` item as a result. */
export function responsesResult(item: Record<string, unknown>, param: string): ToolResultIn {
  if (typeof item.call_id !== 'string' || item.call_id === '')
    throw new InvalidRequest(`\`${param}.call_id\` is required on a function_call_output item.`, `${param}.call_id`);
  return { id: item.call_id, answer: { content: resultContent(item.output) } };
}

/** Responses: the client asked for reasoning summaries (`reasoning.summary` set, not `none`). */
export function responsesWantReasoning(reasoning: unknown): boolean {
  const summary = (reasoning as { summary?: unknown } | null)?.summary;
  return typeof summary === 'string' && summary !== 'none';
}
