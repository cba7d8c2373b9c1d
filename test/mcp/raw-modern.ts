/**
 * A wire-level MCP 2026-07-28 client for the Tasks extension, which the SDK v2 client refuses to carry (its codec
 * rejects `resultType: "task"`; the extension's own package leaves the raw path to the host): every request carries
 * the per-request `_meta` envelope, over stdio to a real `backchannel mcp` or over HTTP with the standard headers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterEach } from 'vitest';
import { ROOT, waitFor } from '../helpers/core.js';
import { BIN, type HubEnv } from '../hub/control/hub-process.js';
import { TASKS_EXTENSION } from './modern-client.js';

export type Wire = Record<string, any>;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface RawClient {
  request(method: string, params?: Wire): Promise<Wire>;
  close(): Promise<void>;
}

function envelope(tasks: boolean): Wire {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'backchannel-raw-test', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
}

function withEnvelope(params: Wire, tasks: boolean): Wire {
  return { ...params, _meta: { ...(params._meta ?? {}), ...envelope(tasks) } };
}

const open: RawClient[] = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.close();
});

/** Over stdio: a new `backchannel mcp` on the hub of `hub`. */
export function rawStdio(hub: HubEnv, options: { tasks?: boolean } = {}): RawClient {
  const child: ChildProcess = spawn(process.execPath, [BIN, 'mcp'], { env: hub.env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  const pending = new Map<number, { resolve(value: Wire): void; reject(error: Error): void }>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as Wire;
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new RpcError(message.error.code, message.error.message, message.error.data));
    else waiter.resolve(message.result);
  });
  let next = 1;
  const client: RawClient = {
    request(method, params = {}) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.stdin!.write(JSON.stringify({ jsonrpc: '2.0', id, method, params: withEnvelope(params, options.tasks ?? false) }) + '\n');
      });
    },
    async close() {
      child.stdin!.end();
      await exited;
    },
  };
  open.push(client);
  return client;
}

/** Over Streamable HTTP: POSTs to `url` with the standard headers (and `headers`, e.g. the bearer token). */
export function rawHttp(url: string, options: { tasks?: boolean; headers?: Record<string, string> } = {}): RawClient {
  let next = 1;
  return {
    async request(method, params = {}) {
      const name = typeof params.taskId === 'string' ? params.taskId : typeof params.name === 'string' ? params.name : undefined;
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': '2026-07-28',
          'Mcp-Method': method,
          ...(name === undefined ? {} : { 'Mcp-Name': name }),
          ...options.headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: next++, method, params: withEnvelope(params, options.tasks ?? false) }),
      });
      const text = await response.text();
      const body = (response.headers.get('content-type') ?? '').includes('text/event-stream')
        ? lastSseMessage(text)
        : (JSON.parse(text) as Wire);
      if (body.error) throw new RpcError(body.error.code, body.error.message, body.error.data);
      return body.result as Wire;
    },
    async close() {},
  };
}

function lastSseMessage(text: string): Wire {
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)) as Wire);
  const reply = data.filter((message) => 'result' in message || 'error' in message).at(-1);
  if (!reply) throw new Error(`no JSON-RPC reply in the event stream: ${text.slice(0, 200)}`);
  return reply;
}

/** Polls `tasks/get` until the task has `status`. */
export async function taskUntil(client: RawClient, taskId: string, status: string): Promise<Wire> {
  return waitFor(
    async () => {
      const task = await client.request('tasks/get', { taskId });
      return task.status === status ? task : undefined;
    },
    `task ${taskId} to be ${status}`,
    60_000,
    100,
  );
}
