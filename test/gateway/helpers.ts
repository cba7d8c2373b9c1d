/** A gateway on a free port with its own endpoint directory, and a raw HTTP client that timestamps SSE events. */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach } from 'vitest';
import { resolveGatewayConfig, startGateway, type Gateway } from '../../src/gateway/index.js';
import type { TaskBroker } from '../../src/broker/index.js';
import type { Clock } from '../../src/model/clock.js';
import { clientOf } from '../../src/client/index.js';
import { fixture, tempDir } from '../helpers/core.js';

const open: Gateway[] = [];
afterEach(async () => {
  for (const gateway of open.splice(0)) await gateway.close();
});

export const STANDIN_AGENT = fixture('gateway/agent.mjs');

/** Model entries running test/fixtures/gateway/agent.mjs in each of its modes. */
export function standinModels(dir: string): Record<string, unknown> {
  const env = { GATEWAY_PID_DIR: dir, GATEWAY_RELEASE_FILE: path.join(dir, 'release') };
  const model = (mode: string) => ({ command: STANDIN_AGENT, env: { ...env, GATEWAY_STANDIN: mode } });
  return {
    echo: model('echo'),
    slow: model('slow'),
    stubborn: model('stubborn'),
    fail: model('fail'),
    'fail-streaming': model('fail-streaming'),
    latency: model('latency'),
    inputs: model('inputs'),
    segments: model('segments'),
    'data-only': model('data-only'),
    empty: model('empty'),
    json: model('json'),
    bridge: model('bridge'),
  };
}

/**
 * Starts a gateway from a config in the file's shape (port 0 unless given). With `broker`, through
 * `clientOf(broker)` (an embedding app's way); without, the gateway opens its own private client
 * (the CLI's `--local` path), with its endpoints in a private temp directory.
 */
export async function startTestGateway(
  raw: Record<string, unknown>,
  options: { broker?: TaskBroker; dir?: string; keepAliveMs?: number; clock?: Clock } = {},
): Promise<Gateway> {
  const dir = options.dir ?? tempDir('bc-gw-');
  const saved = process.env.CURSOR_IPC_DIR;
  process.env.CURSOR_IPC_DIR = path.join(dir, 'ipc');
  try {
    const config = resolveGatewayConfig({ port: 0, ...raw }, process.env, dir);
    const gateway = await startGateway({
      config,
      ...(options.broker ? { client: clientOf(options.broker) } : {}),
      ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    open.push(gateway);
    return gateway;
  } finally {
    if (saved === undefined) delete process.env.CURSOR_IPC_DIR;
    else process.env.CURSOR_IPC_DIR = saved;
  }
}

export interface RawEvent {
  /** The `data:` payload (`[DONE]` stays a string). */
  data: any;
  /** performance.timeOrigin + performance.now() when its bytes arrived. */
  at: number;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
  events: RawEvent[];
}

export interface RawOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Called for each SSE event as it arrives; return true to abort the request there. */
  onEvent?: (event: RawEvent) => boolean | void;
  /** Called with the whole response text so far, after each chunk. */
  onText?: (text: string) => void;
}

/** One HTTP request; the body is sent as given (string) or as JSON. Resolves when the response ends or is aborted. */
export function raw(url: string, body?: unknown, options: RawOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(
      url,
      {
        method: options.method ?? (payload === undefined ? 'GET' : 'POST'),
        headers: { 'Content-Type': 'application/json', ...options.headers },
      },
      (res) => {
        let text = '';
        let pending = '';
        const events: RawEvent[] = [];
        const done = () => {
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, events });
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const at = performance.timeOrigin + performance.now();
          text += chunk;
          options.onText?.(text);
          pending += chunk;
          const parts = pending.split('\n\n');
          pending = parts.pop() ?? '';
          for (const part of parts) {
            // `data: …`, or `event: <name>\ndata: …` (the Anthropic and Responses streams)
            const line = part.split('\n').find((l) => l.startsWith('data: '));
            if (line === undefined) continue;
            const value = line.slice(6);
            const event = { data: value === '[DONE]' ? value : JSON.parse(value), at };
            events.push(event);
            if (options.onEvent?.(event) === true) {
              req.destroy();
              done();
            }
          }
        });
        res.on('end', done);
        res.on('error', () => done());
      },
    );
    req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export const userMessage = (content: string) => [{ role: 'user', content }];

/** Pids the `slow` stand-ins wrote: one file per task, {pid, grandchild}. */
export function slowPids(dir: string): Array<{ pid: number; grandchild: number }> {
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')));
}
