#!/usr/bin/env node
/**
 * The stdio MCP relay: a small MCP server, built on the official SDK, that a coding CLI starts
 * (`node server.js <relay socket>`, from the config the template writes) so that the tools the task
 * was offered become the CLI's MCP tools. It holds no secret: it only knows the relay socket of the
 * agent that started the CLI (host.ts), which holds the task.
 *
 * Guarantees:
 * - `tools/list` lists exactly the task's offered tools (name, description, input schema), asked of
 *   the agent once;
 * - each `tools/call` of a listed tool is forwarded once, arguments as given, as a protocol tool call;
 *   its content comes back whole (a string as one text block; text blocks as they are; any other
 *   JSON as its JSON text), and an error answer as `isError: true` with the message: never as a
 *   JSON-RPC error, so the model sees it and can go on;
 * - a call to a tool that was not offered is answered `isError: true`, naming the offered ones, and
 *   is not forwarded;
 * - an MCP `notifications/cancelled` reaches the agent, which aborts the protocol call;
 * - it exits when its stdin ends (the CLI is done) or when the relay socket closes (the agent is
 *   gone), and prints one line on stderr saying why it could not start.
 */
import net from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { LineDecoder, encodeLine, parseLine } from '../protocol/index.js';
import { RELAY_SERVER_NAME, RelayAnswer, type RelayRequest, type RelayTool } from './wire.js';

/** MCP's stdio transport refuses a message over its buffer (10 MB by default): results of any size go through. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

type Pending = (answer: RelayAnswer) => void;
/** A request without its id (the relay numbers them). */
type Unnumbered<T> = T extends unknown ? Omit<T, 'id'> : never;

function connect(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** An MCP tool result from the caller's answer. */
function toolResult(answer: RelayAnswer): CallToolResult {
  if ('error' in answer) return { content: [{ type: 'text', text: answer.error }], isError: true };
  if ('tools' in answer) return { content: [{ type: 'text', text: 'the agent answered a call with a tool list' }], isError: true };
  const content = answer.content;
  if (typeof content === 'string') return { content: [{ type: 'text', text: content }] };
  if (Array.isArray(content) && content.length > 0 && content.every(isTextBlock)) {
    return { content: content.map((block) => ({ type: 'text', text: block.text })) };
  }
  return { content: [{ type: 'text', text: JSON.stringify(content ?? null) }] };
}

function isTextBlock(value: unknown): value is { type: 'text'; text: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'text' &&
    typeof (value as { text?: unknown }).text === 'string'
  );
}

/** A tool as MCP lists it: its input schema is always an object schema. */
function mcpTool(tool: RelayTool): Tool {
  const schema = { ...tool.input_schema, type: 'object' as const };
  return { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: schema };
}

async function runRelay(socketPath: string): Promise<void> {
  let socket: net.Socket;
  try {
    socket = await connect(socketPath);
  } catch (error) {
    process.stderr.write(`backchannel relay: cannot reach the agent at ${socketPath}: ${(error as Error).message}\n`);
    process.exit(1);
  }
  const pending = new Map<number, Pending>();
  let nextId = 0;
  const decoder = new LineDecoder({
    line(text) {
      const parsed = parseLine(text);
      const answer = parsed.ok ? RelayAnswer.safeParse(parsed.value) : undefined;
      if (!answer?.success) return;
      const waiter = pending.get(answer.data.id);
      pending.delete(answer.data.id);
      waiter?.(answer.data);
    },
    overflow() {
      socket.destroy();
    },
  });
  socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  socket.on('error', () => {});
  let gone = false;
  socket.on('close', () => {
    gone = true;
    for (const waiter of pending.values()) waiter({ id: -1, error: 'the agent that holds the task is gone' });
    pending.clear();
    // Let the answers just given reach the CLI, then go: nothing is left to relay to.
    setImmediate(() => process.stdout.write('', () => process.exit(0)));
  });
  const ask = (request: Unnumbered<RelayRequest>, signal?: AbortSignal): Promise<RelayAnswer> => {
    const id = nextId++;
    if (gone) return Promise.resolve({ id, error: 'the agent that holds the task is gone' });
    return new Promise((resolve) => {
      pending.set(id, resolve);
      socket.write(encodeLine({ ...request, id }));
      signal?.addEventListener('abort', () => socket.write(encodeLine({ op: 'cancel', id })), { once: true });
    });
  };

  let offered: Promise<RelayTool[]> | undefined;
  const tools = () => (offered ??= ask({ op: 'list' }).then((answer) => ('tools' in answer ? answer.tools : [])));

  const mcp = new McpServer({ name: RELAY_SERVER_NAME, version: '1.0.0' }, { capabilities: { tools: {} } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await tools()).map(mcpTool) }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    const known = await tools();
    if (!known.some((tool) => tool.name === name)) {
      const names = known.map((tool) => tool.name).join(', ') || 'none';
      return { content: [{ type: 'text', text: `no tool named "${name}" was offered; the tools are: ${names}` }], isError: true };
    }
    return toolResult(await ask({ op: 'call', name, arguments: request.params.arguments ?? {} }, extra.signal));
  });

  const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: MAX_MESSAGE_BYTES });
  transport.onclose = () => process.exit(0);
  process.stdin.on('end', () => process.exit(0));
  await mcp.connect(transport);
}

const socketPath = process.argv[2];
if (socketPath === undefined || socketPath === '') {
  process.stderr.write('usage: node server.js <relay socket path> (started by a Backchannel template, not by hand)\n');
  process.exit(2);
}
void runRelay(socketPath);
