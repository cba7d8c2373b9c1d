/**
 * The OpenAI Chat Completions wire shapes the gateway sends: completion objects, stream chunks,
 * errors, model lists. Pure builders; the server decides when to send what.
 */
import type { ErrorKind, HttpError } from './http.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export type ErrorType = 'invalid_request_error' | 'not_found_error' | 'rate_limit_error' | 'api_error';

export interface OpenAIError {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}

export function errorBody(message: string, type: ErrorType, code: string | null = null, param: string | null = null): OpenAIError {
  return { error: { message, type, param, code } };
}

const TYPES: Record<ErrorKind, ErrorType> = {
  invalid_request: 'invalid_request_error',
  authentication: 'invalid_request_error',
  permission: 'invalid_request_error',
  not_found: 'not_found_error',
  too_large: 'invalid_request_error',
  rate_limit: 'rate_limit_error',
  api: 'api_error',
  unavailable: 'api_error',
  timeout: 'api_error',
};

/** An `HttpError` in OpenAI's shape (chat completions and the Responses API share it). */
export function openAIError(error: HttpError): OpenAIError {
  return errorBody(error.message, TYPES[error.kind], error.code, error.param);
}

/** Fields every completion and chunk of one request shares. */
export interface CompletionIdentity {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
}

/** A tool call as a chat message carries it (`arguments` is JSON text). */
export interface ChatToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

const argumentsText = (args: unknown) => JSON.stringify(args ?? {});

/** `tool_calls` of an assistant message. */
export const messageToolCalls = (calls: ChatToolCall[]) =>
  calls.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: argumentsText(call.arguments) },
  }));

/** A whole completion; with tool calls, `finish_reason: "tool_calls"` (and `content: null` when there is no text). */
export function completion(who: CompletionIdentity, content: string, usage: Usage, calls: ChatToolCall[] = []) {
  const message =
    calls.length === 0
      ? { role: 'assistant' as const, content, refusal: null }
      : { role: 'assistant' as const, content: content === '' ? null : content, refusal: null, tool_calls: messageToolCalls(calls) };
  return {
    id: who.id,
    object: 'chat.completion' as const,
    created: who.created,
    model: who.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: calls.length === 0 ? ('stop' as const) : ('tool_calls' as const) }],
    usage: usageFields(usage),
  };
}

/** The three usage fields, nothing else (an estimate's marker is the gateway's own). */
const usageFields = ({ prompt_tokens, completion_tokens, total_tokens }: Usage): Usage => ({
  prompt_tokens,
  completion_tokens,
  total_tokens,
});

type Delta = { role?: 'assistant'; content?: string; tool_calls?: unknown[] };

function chunk(who: CompletionIdentity, delta: Delta, finishReason: 'stop' | 'tool_calls' | null) {
  return {
    id: who.id,
    object: 'chat.completion.chunk' as const,
    created: who.created,
    model: who.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** First chunk of a stream: the role, empty content. */
export const roleChunk = (who: CompletionIdentity) => chunk(who, { role: 'assistant', content: '' }, null);
export const contentChunk = (who: CompletionIdentity, content: string) => chunk(who, { content }, null);
export const stopChunk = (who: CompletionIdentity, reason: 'stop' | 'tool_calls' = 'stop') => chunk(who, {}, reason);
/**
 * A streamed tool call, as OpenAI streams one: a chunk with its id, name and empty arguments, then
 * one with the arguments (`index` is the call's place in the step).
 */
export function toolCallChunks(who: CompletionIdentity, call: ChatToolCall, index: number) {
  return [
    chunk(who, { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null),
    chunk(who, { tool_calls: [{ index, function: { arguments: argumentsText(call.arguments) } }] }, null),
  ];
}
/** Sent before `[DONE]` when the client asked for `stream_options.include_usage`. */
export function usageChunk(who: CompletionIdentity, usage: Usage) {
  return {
    id: who.id,
    object: 'chat.completion.chunk' as const,
    created: who.created,
    model: who.model,
    choices: [],
    usage: usageFields(usage),
  };
}

/** One server-sent event. */
export { sseEvent } from './request-task/http.js';
export const SSE_DONE = 'data: [DONE]\n\n';

export function modelEntry(id: string, ownedBy: string, created: number) {
  return { id, object: 'model' as const, created, owned_by: ownedBy };
}

/** The Responses API's `usage` object, from the Chat Completions figures the answer keeps. */
export function responsesUsage(usage: Usage): Record<string, unknown> {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}
