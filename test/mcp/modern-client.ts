/**
 * The official MCP SDK v2 client (`@modelcontextprotocol/client`) pinned to 2026-07-28, over stdio to a real
 * `backchannel mcp` (on the hub of `hub`) or over HTTP to a URL, for the tests. `tasks: true` declares the Tasks
 * extension; `elicit` declares elicitation and answers every input request with what it returns.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, expect } from 'vitest';
import { fixture, ROOT, waitFor, waitUntilGone } from '../helpers/core.js';
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

/**
 * Starts `run_task` of test/fixtures/tree-waiter.mjs (an agent with a child), aborts the waiting call
 * (the client sends notifications/cancelled), and expects the call rejected, the task cancelled and
 * its whole process tree gone. `pids`: how many processes the tree must have had before the abort.
 */
export async function expectAbortedRunTaskCancelsTree(client: Client, options: { pids?: number } = {}): Promise<void> {
  const abort = new AbortController();
  const call = client.callTool(
    { name: 'run_task', arguments: { command: fixture('tree-waiter.mjs'), label: 'tree' } },
    { signal: abort.signal },
  );
  const settled = call.then(
    () => 'resolved',
    () => 'rejected',
  );
  const task = await waitFor(
    async () => (await callTool(client, 'list_tasks', {})).value.tasks.find((t: { label: string }) => t.label === 'tree'),
    'the task',
  );
  const pids = await waitFor(
    async () => (await callTool(client, 'get_task', { task_id: task.task_id })).value.last_partial?.pids as number[] | undefined,
    'the pids',
  );
  if (options.pids !== undefined) expect(pids).toHaveLength(options.pids);
  abort.abort();
  expect(await settled).toBe('rejected');
  await waitFor(
    async () => (await callTool(client, 'get_task', { task_id: task.task_id })).value.state === 'cancelled',
    'the task to be cancelled',
  );
  await waitUntilGone(pids, 15_000);
}
