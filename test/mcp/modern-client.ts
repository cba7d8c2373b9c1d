/**
 * The official MCP SDK v2 client (`@modelcontextprotocol/client`) pinned to 2026-07-28, over stdio to a real
 * `backchannel mcp` (on the hub of `hub`) or over HTTP to a URL, for the tests. `tasks: true` declares the Tasks
 * extension; `elicit` declares elicitation and answers every input request with what it returns.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach } from 'vitest';
import { ROOT } from '../helpers/core.js';
import { BIN, type HubEnv } from '../hub/control/hub-process.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export interface ModernOptions {
  tasks?: boolean;
  elicit?: (message: string) => string;
  /** `'auto'` probes with server/discover and falls back to `initialize`; the default pins 2026-07-28. */
  mode?: 'auto';
  headers?: Record<string, string>;
}

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

function modernClient(options: ModernOptions): Client {
  const capabilities = {
    ...(options.elicit ? { elicitation: {} } : {}),
    ...(options.tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
  };
  const client = new Client(
    { name: 'backchannel-test-v2', version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: options.mode ?? { pin: '2026-07-28' } } },
  );
  if (options.elicit) {
    const answer = options.elicit;
    client.setRequestHandler('elicitation/create', async (request) => ({
      action: 'accept',
      content: { answer: answer((request.params as { message: string }).message) },
    }));
  }
  clients.push(client);
  return client;
}

/** A modern client connected to a new `backchannel mcp` over stdio. */
export async function connectStdio(hub: HubEnv, options: ModernOptions = {}): Promise<Client> {
  const client = modernClient(options);
  const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' }));
  return client;
}

/** A modern client connected to the MCP endpoint at `url`. */
export async function connectHttp(url: string, options: ModernOptions = {}): Promise<Client> {
  const client = modernClient(options);
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: options.headers ?? {} } });
  await client.connect(transport);
  return client;
}

/** A tool's result: its text parsed as JSON (the text itself when it is not JSON), and the raw result. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; value: any }> {
  const result = await client.callTool({ name, arguments: args }, { timeout: 120_000 });
  const text = (result.content?.[0] as { text?: string } | undefined)?.text ?? '';
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // a plain-text error
  }
  return { isError: result.isError === true, value };
}
