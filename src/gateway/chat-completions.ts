/**
 * `POST /v1/chat/completions` (OpenAI Chat Completions): the body → a `Turn`, and the answer as
 * `chat.completion.chunk` events or one `chat.completion`. The run itself is ./turn.ts.
 *
 * - a stream starts (headers and the role chunk, written at once with Nagle off) on the sub-agent's
 *   first partial, and every text delta is written as soon as its partial arrives; a started stream
 *   that goes quiet gets an SSE keep-alive comment;
 * - bridge mode: each tool call is streamed as soon as the agent makes it (`delta.tool_calls`: id and
 *   name, then the arguments), and the step ends with `finish_reason: "tool_calls"`;
 * - errors before the stream starts get an HTTP status and OpenAI's error body; after it started,
 *   one final `data: {"error": …}` event, then the end (no `[DONE]`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { TaskHandle } from '../client/index.js';
import { SseResponder } from './request-task/index.js';
import { sendJson, type HttpError } from './http.js';
import {
  completion,
  contentChunk,
  openAIError,
  roleChunk,
  sseEvent,
  SSE_DONE,
  stopChunk,
  toolCallChunks,
  usageChunk,
  type CompletionIdentity,
} from './openai-shapes.js';
import { parseChatRequest, type ChatRequest } from './request.js';
import { headerSessionIds } from './sessions.js';
import { turnIdentity } from './turn-dedupe.js';
import { jsonWriter, TASK_ID_HEADER, type ClientToolCall, type TurnAnswer, type TurnWriter } from './writer.js';

/** The body as a `Turn` (400 `InvalidRequest` when it is not a chat request). */
export function chatTurn(body: unknown, headers: IncomingHttpHeaders): ChatRequest {
  const request = parseChatRequest(body);
  request.sessionIds.unshift(...headerSessionIds(headers));
  request.identity = turnIdentity('chat', body, headers);
  return request;
}

export function chatWriter(res: ServerResponse, request: ChatRequest, model: string, keepAliveMs: number): TurnWriter {
  const who: CompletionIdentity = { id: `chatcmpl-${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000), model };
  if (request.stream) return new StreamWriter(res, who, keepAliveMs, request.includeUsage);
  return jsonWriter(res, (answer, extras) => completion(who, answer.text, answer.usage, extras.calls), sendOpenAIError);
}

/** Errors before anything was sent: the status, the body, and the task id when there was a task. */
export function sendOpenAIError(res: ServerResponse, error: HttpError, task: TaskHandle | undefined): void {
  if (task) res.setHeader(TASK_ID_HEADER, task.id);
  sendJson(res, error.status, openAIError(error), error.headers);
}

class StreamWriter implements TurnWriter {
  private readonly sse: SseResponder;
  private calls = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly who: CompletionIdentity,
    keepAliveMs: number,
    private readonly includeUsage: boolean,
  ) {
    this.sse = new SseResponder(res, keepAliveMs);
  }

  delta(text: string, task: TaskHandle): void {
    this.start(task);
    if (text !== '') this.sse.write(sseEvent(contentChunk(this.who, text)));
  }

  /** Chat Completions has no thinking of its own: none is sent. */
  thinking(): void {}

  toolCall(call: ClientToolCall, task: TaskHandle): void {
    this.start(task);
    for (const part of toolCallChunks(this.who, call, this.calls++)) this.sse.write(sseEvent(part));
  }

  finish(answer: TurnAnswer, task: TaskHandle | undefined): void {
    if (!this.sse.started && answer.text !== '') {
      this.start(task);
      this.sse.write(sseEvent(contentChunk(this.who, answer.text)));
    }
    this.start(task);
    this.sse.write(sseEvent(stopChunk(this.who, this.calls > 0 ? 'tool_calls' : 'stop')));
    if (this.includeUsage) this.sse.write(sseEvent(usageChunk(this.who, answer.usage)));
    this.sse.end(SSE_DONE);
  }

  fail(error: HttpError, task: TaskHandle | undefined): void {
    if (this.sse.started) this.sse.end(sseEvent(openAIError(error)));
    else sendOpenAIError(this.res, error, task);
  }

  close(): void {
    this.sse.close();
  }

  private start(task: TaskHandle | undefined): void {
    this.sse.start(task ? { [TASK_ID_HEADER]: task.id } : {}, sseEvent(roleChunk(this.who)));
  }
}
