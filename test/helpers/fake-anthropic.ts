/**
 * A loopback Anthropic Messages API (`POST /v1/messages`, SSE and JSON): the stand-in for the model
 * behind a real Claude Code in tests. By default every request gets one canned text answer; a test
 * that wants the client to act gives a `script`, which picks each reply from the request (a text, or
 * a `tool_use` block the client then runs and answers with a `tool_result` in its next request;
 * either after a `thinking` block if the script gives one).
 * Records every request (path, headers, model and the whole body: system, tools, messages) and can
 * hold requests open (`hang`) for cancel tests.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One content block of a request's message, as far as the tests look at it. */
export interface FakeContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
}

export interface FakeMessage {
  /** Claude Code also sends `system` messages among the others (its environment). */
  role: 'user' | 'assistant' | 'system';
  content: string | FakeContentBlock[];
}

/** The parts of a Messages request body the fake reads (the rest is kept as sent). */
export interface FakeMessagesBody {
  model?: string;
  stream?: boolean;
  system?: string | Array<{ type: string; text?: string }>;
  tools?: Array<{ name: string; input_schema?: unknown }>;
  messages?: FakeMessage[];
  [key: string]: unknown;
}

export interface FakeAnthropicRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  model: string;
  stream: boolean;
  body: FakeMessagesBody;
}

/** A reply: a text answer (`end_turn`), or one tool call (`tool_use`, optionally after some text). */
export type FakeTurn = ({ text: string } | { tool: { name: string; input: Record<string, unknown> }; text?: string }) & {
  /** A `thinking` block before the rest (streamed as `thinking_delta`s, then its `signature_delta`). */
  thinking?: string;
};

export interface FakeAnthropicOptions {
  /** The text every request gets when there is no `script` (default "Hi from the fake model."). */
  answer?: string;
  /** Hold every request open, never answering. */
  hang?: boolean;
  /** Picks the reply to each request; the request is already in `requests` when it is called. */
  script?: (request: FakeAnthropicRequest) => FakeTurn;
}

export interface FakeAnthropic {
  /** http://127.0.0.1:<port> — what ANTHROPIC_BASE_URL should be. */
  url: string;
  requests: FakeAnthropicRequest[];
  /** The ids of the tool_use blocks it sent, in order (`toolu_fake_1`, …). */
  toolUses: string[];
  close(): Promise<void>;
}

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const answer = options.answer ?? 'Hi from the fake model.';
  const requests: FakeAnthropicRequest[] = [];
  const toolUses: string[] = [];
  const open = new Set<http.ServerResponse>();
  let replies = 0;
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const body = (text ? JSON.parse(text) : {}) as FakeMessagesBody;
      const model = body.model ?? 'claude-fake';
      const request: FakeAnthropicRequest = { path: req.url ?? '', headers: req.headers, model, stream: body.stream === true, body };
      requests.push(request);
      if (!req.url?.startsWith('/v1/messages')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not here' } }));
        return;
      }
      if (options.hang) {
        open.add(res);
        return;
      }
      let turn: FakeTurn;
      try {
        turn = options.script ? options.script(request) : { text: answer };
      } catch (error) {
        // A script that cannot answer is a test bug: say so to the client (and in its output) at once.
        res.writeHead(400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `fake script: ${String(error)}` } }));
        return;
      }
      replies += 1;
      const blocks: Array<
        | { type: 'thinking'; thinking: string; signature: string }
        | { type: 'text'; text: string }
        | { type: 'tool_use'; id: string; name: string; input: object }
      > = [];
      if (turn.thinking !== undefined) blocks.push({ type: 'thinking', thinking: turn.thinking, signature: `sig-fake-${replies}` });
      if (turn.text !== undefined && turn.text !== '') blocks.push({ type: 'text', text: turn.text });
      if ('tool' in turn) {
        const id = `toolu_fake_${toolUses.length + 1}`;
        toolUses.push(id);
        blocks.push({ type: 'tool_use', id, name: turn.tool.name, input: turn.tool.input });
      }
      const stopReason = 'tool' in turn ? 'tool_use' : 'end_turn';
      const usage = { input_tokens: 12, output_tokens: 5 };
      const message = { id: `msg_fake_${replies}`, type: 'message', role: 'assistant', model, stop_sequence: null };
      if (body.stream !== true) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ ...message, content: blocks, stop_reason: stopReason, usage }));
        return;
      }
      const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      let sse = event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
      blocks.forEach((block, index) => {
        if (block.type === 'thinking') {
          // As the API streams thinking: an empty block, its text in pieces, then the signature.
          const half = Math.floor(block.thinking.length / 2);
          sse +=
            event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }) +
            event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking.slice(0, half) } }) +
            event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking.slice(half) } }) +
            event('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
        } else if (block.type === 'text') {
          sse +=
            event('content_block_start', { index, content_block: { type: 'text', text: '' } }) +
            event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
        } else {
          // As the API streams a tool call: an empty input, then its JSON in pieces.
          const json = JSON.stringify(block.input);
          const half = Math.floor(json.length / 2);
          sse +=
            event('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }) +
            event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(0, half) } }) +
            event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(half) } });
        }
        sse += event('content_block_stop', { index });
      });
      sse +=
        event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } }) +
        event('message_stop', {});
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(sse);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    toolUses,
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The blocks of a message's content (a plain string is one text block). */
export function blocksOf(message: FakeMessage | undefined): FakeContentBlock[] {
  if (!message) return [];
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
}

/** The system prompt as one string. */
export function systemText(body: FakeMessagesBody): string {
  if (typeof body.system === 'string') return body.system;
  return (body.system ?? []).map((part) => part.text ?? '').join('\n');
}
