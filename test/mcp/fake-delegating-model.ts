/**
 * A fake Anthropic Messages API (`POST /v1/messages`, streamed as SSE) for driving the real Claude
 * Code CLI without a model (test/helpers/fake-anthropic.ts answers one canned text; this one plays
 * tool calls). It plays a model that delegates to Backchannel: when the request offers
 * the Backchannel MCP tools it answers with a `tool_use` of start_task, then (after the tool result
 * carries the task id) of wait_for_task, then a final text quoting the wait result. Every other
 * request (titles, summaries) gets a short text. Each request is recorded for the test to inspect.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  tools: string[];
  messages: Array<{ role: string; content: unknown }>;
}

export interface DelegatingModel {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

export interface DelegationScript {
  /** Prefix of the MCP tool names, e.g. `mcp__backchannel__`. */
  toolPrefix: string;
  /** Arguments of the start_task call. */
  startArgs: Record<string, unknown>;
}

export async function startDelegatingModel(script: DelegationScript): Promise<DelegatingModel> {
  const requests: RecordedRequest[] = [];
  let counter = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not here' } }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        model?: string;
        tools?: Array<{ name: string }>;
        messages?: RecordedRequest['messages'];
        stream?: boolean;
      };
      const record: RecordedRequest = {
        path: req.url,
        tools: (body.tools ?? []).map((tool) => tool.name),
        messages: body.messages ?? [],
      };
      requests.push(record);
      counter += 1;
      const blocks = reply(record, script, counter);
      const stopReason = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
      const message = { id: `msg_fake_${counter}`, type: 'message', role: 'assistant', model: body.model ?? 'claude-fake' };
      const usage = { input_tokens: 10, output_tokens: 5 };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...message, content: blocks, stop_reason: stopReason, stop_sequence: null, usage }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (event: string, data: unknown): boolean => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage } });
      blocks.forEach((block, index) => {
        if (block.type === 'text') {
          send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } });
        } else {
          send('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
          });
          send('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
          });
        }
        send('content_block_stop', { type: 'content_block_stop', index });
      });
      send('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: 5 },
      });
      send('message_stop', { type: 'message_stop' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The text of the tool_result blocks in the last user message. */
function lastToolResult(messages: RecordedRequest['messages']): string | undefined {
  const last = messages.at(-1);
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return undefined;
  const results = (last.content as Array<{ type?: string; content?: unknown }>).filter((block) => block.type === 'tool_result');
  if (results.length === 0) return undefined;
  return results
    .map((block) =>
      typeof block.content === 'string'
        ? block.content
        : Array.isArray(block.content)
          ? (block.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('')
          : '',
    )
    .join('\n');
}

function reply(request: RecordedRequest, script: DelegationScript, n: number): Block[] {
  const start = `${script.toolPrefix}start_task`;
  const wait = `${script.toolPrefix}wait_for_task`;
  if (!request.tools.includes(start)) return [{ type: 'text', text: 'Backchannel test' }];
  const result = lastToolResult(request.messages);
  if (result === undefined) {
    return [
      { type: 'text', text: 'I will delegate this to a background sub-agent.' },
      { type: 'tool_use', id: `toolu_fake_${n}`, name: start, input: script.startArgs },
    ];
  }
  const started = /"task_id":\s*"([0-9a-f-]{36})"/.exec(result);
  if (started && !/"done"/.test(result)) {
    return [{ type: 'tool_use', id: `toolu_fake_${n}`, name: wait, input: { task_id: started[1], timeout_seconds: 60 } }];
  }
  return [{ type: 'text', text: `The sub-agent finished. Its report: ${result.replace(/\s+/g, ' ').slice(0, 500)}` }];
}
