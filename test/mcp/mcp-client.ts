/** The official MCP SDK client over stdio to a real `backchannel mcp` process (on the hub of `hub`), for the tests. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach } from 'vitest';
import { ROOT } from '../helpers/core.js';
import { BIN, type HubEnv } from '../hub/control/hub-process.js';

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

/** A client connected to a new `backchannel mcp`; with `elicit`, it supports elicitation and answers with it. */
export async function connect(
  hub: HubEnv,
  options: { elicit?: (question: string, request: ElicitRequest) => string } = {},
): Promise<Client> {
  const client = new Client({ name: 'backchannel-test', version: '1.0.0' }, { capabilities: options.elicit ? { elicitation: {} } : {} });
  if (options.elicit) {
    const answer = options.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({
      action: 'accept',
      content: { answer: answer((request.params as { message: string }).message, request) },
    }));
  }
  const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' }));
  clients.push(client);
  return client;
}

/** The JSON a tool returned (its text parsed; the text itself when it is not JSON). */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: { signal?: AbortSignal } = {},
): Promise<{ isError: boolean; value: any; structured: unknown }> {
  const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000, ...options });
  const text = (result.content[0] as { text: string }).text;
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // a plain-text error
  }
  return { isError: result.isError === true, value, structured: result.structuredContent };
}
