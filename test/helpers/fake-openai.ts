/**
 * A loopback OpenAI-compatible Chat Completions server with scripted replies: the stand-in for a
 * model, which cannot exist in tests. Speaks the real wire format (`/v1/chat/completions`
 * non-streaming, `/v1/models`, `{error: {...}}` bodies) and records every request it gets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  /** The assistant message content (for the llm-agent: the JSON decision, or something malformed). */
  content?: string;
  /** Usage reported for this call. @default {prompt_tokens: 10, completion_tokens: 5} */
  usage?: { prompt_tokens: number; completion_tokens: number };
  finishReason?: 'stop' | 'length';
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** Never answer; the request stays open until the client goes away (for cancel tests). */
  hang?: boolean;
  model?: string;
}

export interface RecordedRequest {
  body: {
    model: string;
    messages: Array<{ role: string; content: string }>;
    response_format?: { type: string };
    [key: string]: unknown;
  };
  authorization: string | undefined;
  /** Set when the client closed the connection before we answered. */
  aborted: boolean;
}

export interface FakeOpenAI {
  /** e.g. http://127.0.0.1:40123/v1 — what OPENAI_BASE_URL should be. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Resolves when a request arrives that the script answers with `hang` (the agent is mid-request). */
  hanging: Promise<RecordedRequest>;
  /** Resolves when the hanging request was aborted by the client. */
  hangAborted: Promise<void>;
  close(): Promise<void>;
}

/** Replies are used in order; requests after the script ran out get a 500. */
export async function startFakeOpenAI(script: ScriptedReply[]): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  let next = 0;
  let onHang!: (request: RecordedRequest) => void;
  let onHangAborted!: () => void;
  const hanging = new Promise<RecordedRequest>((resolve) => (onHang = resolve));
  const hangAborted = new Promise<void>((resolve) => (onHangAborted = resolve));

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/v1/models') {
        send(200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 1796025600, owned_by: 'test' }] });
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        send(404, { error: { message: `no route ${req.method} ${req.url}`, type: 'not_found_error', param: null, code: null } });
        return;
      }
      let body: RecordedRequest['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
      } catch {
        send(400, { error: { message: 'invalid JSON body', type: 'invalid_request_error', param: null, code: null } });
        return;
      }
      const recorded: RecordedRequest = { body, authorization: req.headers.authorization, aborted: false };
      requests.push(recorded);
      const reply = script[next++];
      if (!reply) {
        send(500, { error: { message: 'the fake model ran out of scripted replies', type: 'api_error', param: null, code: null } });
        return;
      }
      if (reply.hang) {
        res.on('close', () => {
          if (!res.writableEnded) {
            recorded.aborted = true;
            onHangAborted();
          }
        });
        onHang(recorded);
        return;
      }
      if (reply.status !== undefined && reply.status !== 200) {
        send(reply.status, {
          error: {
            message: reply.content ?? 'scripted failure',
            type: reply.status >= 500 ? 'api_error' : 'invalid_request_error',
            param: null,
            code: null,
          },
        });
        return;
      }
      const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
      send(200, {
        id: `chatcmpl-${next}`,
        object: 'chat.completion',
        created: 1796025600,
        model: reply.model ?? body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply.content ?? '' }, finish_reason: reply.finishReason ?? 'stop' }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    hanging,
    hangAborted,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A decision the llm-agent understands: a tool call. */
export const act = (name: string, args: Record<string, unknown>, thought = `use ${name}`): string =>
  JSON.stringify({ thought, action: { name, arguments: args } });

/** A decision the llm-agent understands: the final answer. */
export const answer = (text: unknown, thought = 'done'): string => JSON.stringify({ thought, action: null, answer: text });
