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

export function completion(who: CompletionIdentity, content: string, usage: Usage) {
  return {
    id: who.id,
    object: 'chat.completion' as const,
    created: who.created,
    model: who.model,
    choices: [
      { index: 0, message: { role: 'assistant' as const, content, refusal: null }, logprobs: null, finish_reason: 'stop' as const },
    ],
    usage: usageFields(usage),
  };
}

/** The three usage fields, nothing else (an estimate's marker is the gateway's own). */
const usageFields = ({ prompt_tokens, completion_tokens, total_tokens }: Usage): Usage => ({
  prompt_tokens,
  completion_tokens,
  total_tokens,
});

type Delta = { role?: 'assistant'; content?: string };

function chunk(who: CompletionIdentity, delta: Delta, finishReason: 'stop' | null) {
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
export const stopChunk = (who: CompletionIdentity) => chunk(who, {}, 'stop');
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
