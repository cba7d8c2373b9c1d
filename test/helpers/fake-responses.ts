/**
 * A loopback OpenAI Responses API server (`POST /v1/responses`, streamed) with scripted replies: the
 * stand-in model for the real Codex CLI, which speaks only this API (`wire_api = "responses"`).
 * Each reply is a list of output items — function calls the client runs (Codex: `exec_command`),
 * reasoning summaries and assistant messages — streamed as the real events: `response.created`, `response.in_progress`,
 * `response.output_item.added`, `response.function_call_arguments.delta`/`.done` or
 * `response.content_part.added`, `response.output_text.delta`/`.done`, `response.content_part.done`,
 * `response.output_item.done`, and `response.completed` with usage; every event has `sequence_number`.
 * Every request is recorded (its body: `input` holds the conversation so far, `tools` what the client offers).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** `namespace`: the namespace tool the function belongs to (Codex offers an MCP server's tools as one, `mcp__<server>`). */
export type OutputItem =
  | { type: 'function_call'; name: string; arguments: string; namespace?: string }
  | { type: 'message'; text: string }
  | { type: 'reasoning'; summary: string };

export interface ScriptedResponse {
  output?: OutputItem[];
  /** Reported in `response.completed`. @default {input_tokens: 100, cached_tokens: 0, output_tokens: 10} */
  usage?: { input_tokens: number; cached_tokens?: number; output_tokens: number };
  /** Answer with this HTTP status and an OpenAI-style error body instead (e.g. 401). */
  status?: number;
  message?: string;
  /** End the stream after `response.created`, without `response.completed` (a dropped connection). */
  drop?: boolean;
  /** Answer only once this settles: the client waits mid-turn (to look at a running task's step). */
  hold?: Promise<unknown>;
}

export interface ResponsesRequest {
  body: {
    model?: string;
    input: Array<{
      type?: string;
      role?: string;
      content?: unknown;
      name?: string;
      arguments?: string;
      call_id?: string;
      output?: unknown;
    }>;
    tools?: Array<{ type: string; name?: string }>;
    stream?: boolean;
    [key: string]: unknown;
  };
  headers: http.IncomingHttpHeaders;
}

export interface FakeResponses {
  /** e.g. http://127.0.0.1:40123/v1 — a provider's `base_url`. */
  baseUrl: string;
  requests: ResponsesRequest[];
  close(): Promise<void>;
}

/** A function call in a reply: `arguments` as the JSON text the model streams. */
export const call = (name: string, args: Record<string, unknown>): OutputItem => ({
  type: 'function_call',
  name,
  arguments: JSON.stringify(args),
});

/** An assistant message in a reply. */
export const say = (text: string): OutputItem => ({ type: 'message', text });

/** A reasoning item with one summary part (streamed as `response.reasoning_summary_text.delta`). */
export const reason = (summary: string): OutputItem => ({ type: 'reasoning', summary });

/** Replies are used in order; a request after the script ran out gets a 500. */
export async function startFakeResponses(script: ScriptedResponse[]): Promise<FakeResponses> {
  const requests: ResponsesRequest[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const fail = (status: number, message: string, type = 'invalid_request_error', code: string | null = null) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message, type, param: null, code } }));
      };
      if (req.method !== 'POST' || req.url !== '/v1/responses') {
        fail(404, `no route ${req.method} ${req.url}`, 'not_found_error');
        return;
      }
      let body: ResponsesRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ResponsesRequest['body'];
      } catch {
        fail(400, 'invalid JSON body');
        return;
      }
      requests.push({ body, headers: req.headers });
      const n = next++;
      const reply = script[n];
      if (!reply) {
        fail(500, 'the fake model ran out of scripted replies', 'server_error');
        return;
      }
      if (reply.status !== undefined && reply.status !== 200) {
        fail(
          reply.status,
          reply.message ?? 'scripted failure',
          reply.status >= 500 ? 'server_error' : 'invalid_request_error',
          reply.status === 401 ? 'invalid_api_key' : null,
        );
        return;
      }
      const model = body.model ?? 'fake-model';
      if (reply.hold) void reply.hold.then(() => stream(res, n + 1, model, reply));
      else stream(res, n + 1, model, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function stream(res: http.ServerResponse, n: number, model: string, reply: ScriptedResponse): void {
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  const response = {
    id: `resp_fake_${n}`,
    object: 'response',
    created_at: 1796000000 + n,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    model,
    output: [] as unknown[],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
  };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  send('response.created', { response });
  if (reply.drop) {
    res.end();
    return;
  }
  send('response.in_progress', { response });
  const done: unknown[] = [];
  (reply.output ?? []).forEach((out, index) => {
    if (out.type === 'function_call') {
      const item = {
        id: `fc_fake_${n}_${index}`,
        type: 'function_call',
        status: 'in_progress',
        call_id: `call_fake_${n}_${index}`,
        name: out.name,
        ...(out.namespace !== undefined ? { namespace: out.namespace } : {}),
        arguments: '',
      };
      send('response.output_item.added', { output_index: index, item });
      send('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: out.arguments });
      send('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: out.arguments });
      const completed = { ...item, status: 'completed', arguments: out.arguments };
      send('response.output_item.done', { output_index: index, item: completed });
      done.push(completed);
    } else if (out.type === 'reasoning') {
      const item = { id: `rs_fake_${n}_${index}`, type: 'reasoning', summary: [] as unknown[] };
      const where = { item_id: item.id, output_index: index, summary_index: 0 };
      const part = { type: 'summary_text', text: out.summary };
      send('response.output_item.added', { output_index: index, item });
      send('response.reasoning_summary_part.added', { ...where, part: { ...part, text: '' } });
      send('response.reasoning_summary_text.delta', { ...where, delta: out.summary });
      send('response.reasoning_summary_text.done', { ...where, text: out.summary });
      send('response.reasoning_summary_part.done', { ...where, part });
      const completed = { ...item, summary: [part] };
      send('response.output_item.done', { output_index: index, item: completed });
      done.push(completed);
    } else {
      const item = { id: `msg_fake_${n}_${index}`, type: 'message', status: 'in_progress', role: 'assistant', content: [] as unknown[] };
      const where = { item_id: item.id, output_index: index, content_index: 0 };
      const part = { type: 'output_text', text: out.text, annotations: [] };
      send('response.output_item.added', { output_index: index, item });
      send('response.content_part.added', { ...where, part: { ...part, text: '' } });
      send('response.output_text.delta', { ...where, delta: out.text, logprobs: [] });
      send('response.output_text.done', { ...where, text: out.text, logprobs: [] });
      send('response.content_part.done', { ...where, part });
      const completed = { ...item, status: 'completed', content: [part] };
      send('response.output_item.done', { output_index: index, item: completed });
      done.push(completed);
    }
  });
  const usage = reply.usage ?? { input_tokens: 100, output_tokens: 10 };
  send('response.completed', {
    response: {
      ...response,
      status: 'completed',
      output: done,
      usage: {
        input_tokens: usage.input_tokens,
        input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
        output_tokens: usage.output_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input_tokens + usage.output_tokens,
      },
    },
  });
  res.end();
}
