/**
 * A loopback Anthropic Messages API (`POST /v1/messages`, SSE and JSON) with one canned answer: the
 * stand-in for the model behind a real Claude Code in tests. Records every request (path, headers,
 * model, last user text) and can hold requests open (`hang`) for cancel tests.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeAnthropicRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  model: string;
  stream: boolean;
}

export interface FakeAnthropic {
  /** http://127.0.0.1:<port> — what ANTHROPIC_BASE_URL should be. */
  url: string;
  requests: FakeAnthropicRequest[];
  close(): Promise<void>;
}

export async function startFakeAnthropic(options: { answer?: string; hang?: boolean } = {}): Promise<FakeAnthropic> {
  const answer = options.answer ?? 'Hi from the fake model.';
  const requests: FakeAnthropicRequest[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const body = (text ? JSON.parse(text) : {}) as { model?: string; stream?: boolean };
      const model = body.model ?? 'claude-fake';
      requests.push({ path: req.url ?? '', headers: req.headers, model, stream: body.stream === true });
      if (!req.url?.startsWith('/v1/messages')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not here' } }));
        return;
      }
      if (options.hang) {
        open.add(res);
        return;
      }
      const usage = { input_tokens: 12, output_tokens: 5 };
      const message = { id: 'msg_fake', type: 'message', role: 'assistant', model, stop_sequence: null };
      if (body.stream !== true) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ ...message, content: [{ type: 'text', text: answer }], stop_reason: 'end_turn', usage }));
        return;
      }
      const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(
        event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }) +
          event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
          event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: answer } }) +
          event('content_block_stop', { index: 0 }) +
          event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }) +
          event('message_stop', {}),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
