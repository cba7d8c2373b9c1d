/**
 * Every kind of object and stream event the gateway's three model APIs send, collected from a real
 * gateway (the stand-in agent's `echo` and `fail-streaming` models), for the checks against the
 * official SDKs' types (test/gateway/wire-types.test.ts, test/clients/sdks.clients.ts).
 */
import { raw, type RawResponse } from './helpers.js';

/** What the value is, in the SDKs' terms (each check maps these to its own type names). */
export type WireKind =
  | 'chat.completion'
  | 'chat.completion.chunk'
  | 'response'
  | 'response.event'
  | 'message'
  | 'message.event'
  | 'message.error'
  | 'model'
  | 'count_tokens';

export interface WireSample {
  kind: WireKind;
  /** The request and, for an event, its type: for error messages. */
  label: string;
  value: unknown;
}

const user = [{ role: 'user', content: 'ping' }];
const tool = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false };

/** One request of each API and mode, with its key; their answers as samples. */
export async function wireSamples(url: string, key: string): Promise<WireSample[]> {
  const headers = { Authorization: `Bearer ${key}`, 'x-api-key': key };
  const post = (route: string, body: unknown) => raw(`${url}${route}`, body, { headers });
  const samples: WireSample[] = [];
  const whole = (kind: WireKind, label: string, response: RawResponse) => {
    if (response.status !== 200) throw new Error(`${label}: HTTP ${response.status} ${response.text}`);
    samples.push({ kind, label, value: response.json });
  };
  const events = (kind: WireKind, label: string, response: RawResponse) => {
    if (response.status !== 200) throw new Error(`${label}: HTTP ${response.status} ${response.text}`);
    for (const { data } of response.events) {
      if (data === '[DONE]' || (kind === 'message.event' && data.type === 'ping')) continue;
      const type = typeof data?.type === 'string' ? data.type : typeof data?.object === 'string' ? data.object : 'event';
      samples.push({ kind, label: `${label} ${type}`, value: data });
    }
  };

  whole('chat.completion', 'chat', await post('/chat/completions', { model: 'echo', messages: user }));
  const chatStream = { model: 'echo', messages: user, stream: true, stream_options: { include_usage: true } };
  events('chat.completion.chunk', 'chat stream', await post('/chat/completions', chatStream));

  whole('response', 'responses', await post('/responses', { model: 'echo', input: 'ping' }));
  const withTools = { model: 'echo', input: 'ping', instructions: 'Be brief.', tools: [tool], tool_choice: 'auto', metadata: { a: 'b' } };
  whole('response', 'responses with tools', await post('/responses', withTools));
  events('response.event', 'responses stream', await post('/responses', { model: 'echo', input: 'ping', stream: true }));
  events('response.event', 'responses failing stream', await post('/responses', { model: 'fail-streaming', input: 'x', stream: true }));

  await backgroundSamples(url, headers, whole, events);

  whole('message', 'messages', await post('/messages', { model: 'echo', max_tokens: 64, messages: user }));
  for (const model of ['fail', 'no-such-model']) {
    const failed = await post('/messages', { model, max_tokens: 64, messages: user });
    samples.push({ kind: 'message.error', label: `messages ${model} (${failed.status})`, value: failed.json });
  }
  events('message.event', 'messages stream', await post('/messages', { model: 'echo', max_tokens: 64, messages: user, stream: true }));

  const models = await raw(`${url}/models`, undefined, { headers });
  for (const model of (models.json as { data: unknown[] }).data) samples.push({ kind: 'model', label: 'models', value: model });
  whole('count_tokens', 'count_tokens', await post('/messages/count_tokens', { model: 'echo', messages: user }));
  return samples;
}

/** Background responses (src/gateway/background/): created, retrieved once completed, streamed, cancelled. */
async function backgroundSamples(
  url: string,
  headers: Record<string, string>,
  whole: (kind: WireKind, label: string, response: RawResponse) => void,
  events: (kind: WireKind, label: string, response: RawResponse) => void,
): Promise<void> {
  const post = (route: string, body: unknown) => raw(`${url}${route}`, body, { headers });
  const created = await post('/responses', { model: 'echo', input: 'ping', background: true });
  whole('response', 'background created', created);
  const id = (created.json as { id: string }).id;
  let retrieved = await raw(`${url}/responses/${id}`, undefined, { headers });
  for (let i = 0; i < 600 && retrieved.json?.status !== 'completed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    retrieved = await raw(`${url}/responses/${id}`, undefined, { headers });
  }
  whole('response', 'background retrieved', retrieved);
  events('response.event', 'background stream', await post('/responses', { model: 'echo', input: 'ping', background: true, stream: true }));
  const slow = await post('/responses', { model: 'slow', input: 'ping', background: true });
  whole('response', 'background cancelled', await post(`/responses/${(slow.json as { id: string }).id}/cancel`, {}));
}

/** Each kind's type in the Node SDKs: the namespace (a declaration file of `openai` or `@anthropic-ai/sdk`) and the name. */
export const NODE_SDK_TYPES: Record<WireKind, { sdk: 'openai' | 'anthropic'; namespace: string; type: string }> = {
  'chat.completion': { sdk: 'openai', namespace: 'Chat', type: 'ChatCompletion' },
  'chat.completion.chunk': { sdk: 'openai', namespace: 'Chat', type: 'ChatCompletionChunk' },
  response: { sdk: 'openai', namespace: 'Responses', type: 'Response' },
  'response.event': { sdk: 'openai', namespace: 'Responses', type: 'ResponseStreamEvent' },
  model: { sdk: 'openai', namespace: 'Models', type: 'Model' },
  message: { sdk: 'anthropic', namespace: 'Messages', type: 'Message' },
  'message.event': { sdk: 'anthropic', namespace: 'Messages', type: 'RawMessageStreamEvent' },
  'message.error': { sdk: 'anthropic', namespace: 'Shared', type: 'ErrorResponse' },
  count_tokens: { sdk: 'anthropic', namespace: 'Messages', type: 'MessageTokensCount' },
};

/** The declaration file of each namespace, inside the SDK's package directory. */
export const NODE_SDK_FILES: Record<string, string> = {
  Chat: 'resources/chat/completions/completions.d.ts',
  Responses: 'resources/responses/responses.d.ts',
  Models: 'resources/models.d.ts',
  Messages: 'resources/messages/messages.d.ts',
  Shared: 'resources/shared.d.ts',
};
