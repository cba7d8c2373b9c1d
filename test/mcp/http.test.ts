/**
 * MCP over Streamable HTTP on the hub (`backchannel serve`, real processes): the bearer token made 0600 and printed
 * once, the panel's Host and Origin checks, and the official SDK v2 client pinned to 2026-07-28 with the token —
 * the tools, run_task to completion, a question as an input request, a cancelled call ending the process tree — the
 * Tasks extension over HTTP, the 2025-11-25 MCP Tasks for a 2025-era client (one session each), and a 2025-era
 * client and the v2 client in `auto` mode on the same hub at once.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, test } from 'vitest';
import { fixture, waitFor } from '../helpers/core.js';
import { hubEnv, printed, start, type HubEnv } from '../hub/control/hub-process.js';
import { callTool, connectHttp, expectAbortedRunTaskCancelsTree } from './modern-client.js';
import { rawHttp, taskUntil } from './raw-modern.js';

interface McpHub {
  url: string;
  token: string;
  auth: Record<string, string>;
  stdout(): string;
}

async function startMcpHub(hub: HubEnv = hubEnv()): Promise<McpHub> {
  const proc = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
  await printed(proc, /(Press Ctrl\+C)/, 'serve to start');
  const url = await printed(proc, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
  const token = await printed(proc, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
  return { url, token, auth: { Authorization: `Bearer ${token}` }, stdout: proc.stdout };
}

describe('MCP over HTTP on the hub', () => {
  test('the token is made 0600 in the config dir and printed once; no token, a wrong Host or Origin: refused', async () => {
    const hub = hubEnv();
    const first = await startMcpHub(hub);
    const file = path.join(hub.dir, 'config', 'backchannel', 'mcp-token');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.stdout()).toContain(file);
    // Another hub with the same config dir uses the same token and does not print it.
    const again = hubEnv();
    const second = start(['serve', '--data-dir', path.join(again.dir, 'data')], {
      ...again.env,
      XDG_CONFIG_HOME: path.join(hub.dir, 'config'),
    });
    await printed(second, /(Press Ctrl\+C)/, 'the second serve to start');
    expect(second.stdout()).not.toContain(first.token);
    expect(second.stdout()).not.toContain('shown once');

    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    expect((await fetch(first.url, { method: 'POST', headers, body })).status).toBe(401);
    expect((await fetch(first.url, { method: 'POST', headers: { ...headers, Authorization: 'Bearer nope' }, body })).status).toBe(401);
    const port = new URL(first.url).port;
    const evil = await fetch(first.url, { method: 'POST', headers: { ...headers, ...first.auth, Origin: 'http://evil.example' }, body });
    expect(evil.status).toBe(403);
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { ...headers, ...first.auth, Host: 'attacker.example' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(421);
  });

  test('the same MCP endpoint answers on the control socket, where only the owner connects, with its own token (X13)', async () => {
    const env = hubEnv();
    const hub = await startMcpHub(env);
    const { request } = await import('node:http');
    const post = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} });
        const req = request(
          {
            socketPath: env.socket,
            path: '/mcp',
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const answered = await post(hub.auth);
    expect(answered.status).toBe(200);
    expect(answered.body).toContain('"jsonrpc":"2.0"');
    expect((await post({})).status).toBe(401);
  });

  test('the SDK v2 client pinned to 2026-07-28: tools, run_task, a question as an input request, a cancel ending the tree', async () => {
    const hub = await startMcpHub();
    const questions: string[] = [];
    const client = await connectHttp(hub.url, { headers: hub.auth, elicit: (message) => (questions.push(message), 'main') });
    expect(client.getProtocolEra()).toBe('modern');
    expect((await client.listTools()).tools).toHaveLength(13);
    const done = await callTool(client, 'run_task', { command: process.execPath, args: [fixture('quick.mjs')], input: { n: 7 } });
    expect(done.value).toMatchObject({ state: 'succeeded', result: { n: 7 } });
    const asked = await callTool(client, 'run_task', { command: fixture('asker.mjs'), label: 'asks' });
    expect(asked.value).toMatchObject({ state: 'succeeded', result: { answer: 'main' } });
    expect(questions).toEqual(['Sub-agent "asks" asks: Which branch should I use?']);

    await expectAbortedRunTaskCancelsTree(client);
  });

  test("the run policy's mcp door: over HTTP, a command the owner did not allow is refused and nothing runs", async () => {
    const hub = hubEnv();
    const config = path.join(hub.dir, 'defaults.yaml');
    writeFileSync(config, '');
    hub.env.BACKCHANNEL_CONFIG = config;
    const mcp = await startMcpHub(hub);
    const client = await connectHttp(mcp.url, { headers: mcp.auth });
    const mark = path.join(hub.dir, 'ran');
    const refused = await callTool(client, 'run_task', { command: 'sh', args: ['-c', `touch ${mark}`], cwd: '/' });
    expect(refused.isError).toBe(true);
    expect(refused.value).toContain(`refused \`sh -c touch ${mark}\` (in /) from an MCP client`);
    expect(existsSync(mark)).toBe(false);
    expect((await callTool(client, 'list_tasks', {})).value.tasks).toEqual([]);
  });

  test('the Tasks extension over HTTP: run_task is a task; tasks/get until completed', async () => {
    const hub = await startMcpHub();
    const client = rawHttp(hub.url, { tasks: true, headers: hub.auth });
    const created = await client.request('tools/call', {
      name: 'run_task',
      arguments: { command: fixture('sleeper.mjs'), input: { ms: 500 } },
    });
    expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 500 });
    const completed = await taskUntil(client, created.taskId, 'completed');
    expect(completed.result).toMatchObject({ isError: false, structuredContent: { state: 'succeeded' } });
  });

  test('a 2025-era client gets the 2025-11-25 MCP Tasks over HTTP: a task-augmented run_task, tasks/get, tasks/result, status notifications', async () => {
    const hub = await startMcpHub();
    const legacy = new LegacyClient({ name: 'legacy-test', version: '1.0.0' });
    const transport = new LegacyHttpTransport(new URL(hub.url), { requestInit: { headers: hub.auth } });
    await legacy.connect(transport);
    expect(transport.sessionId).toEqual(expect.any(String));
    expect(legacy.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });
    const statuses: string[] = [];
    legacy.setNotificationHandler(TaskStatusNotificationSchema, (note) => void statuses.push(note.params.status));
    const created = await legacy.request(
      {
        method: 'tools/call',
        params: { name: 'run_task', arguments: { command: fixture('sleeper.mjs'), input: { ms: 300 } }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    expect(created.task).toMatchObject({ status: 'working', ttl: 60_000 });
    const done = await waitFor(async () => {
      const task = await legacy.experimental.tasks.getTask(created.task.taskId);
      return task.status === 'completed' ? task : undefined;
    }, 'the task to complete');
    expect(done.taskId).toBe(created.task.taskId);
    const result = await legacy.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ task_id: created.task.taskId, state: 'succeeded' });
    await waitFor(() => statuses.includes('completed'), 'the completed status notification');
    // The session ends with the client's DELETE; its id is then unknown (404).
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    const after = await fetch(hub.url, {
      method: 'POST',
      headers: {
        ...hub.auth,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(after.status).toBe(404);
    // A 2025-era request of no session that is no initialize (a readiness probe) keeps the stateless answer.
    const probe = await fetch(hub.url, {
      method: 'POST',
      headers: { ...hub.auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} }),
    });
    expect(probe.status).toBe(200);
    await legacy.close();
  });

  test('a 2025-era client (initialize) and the v2 client in auto mode, on the same hub at once', async () => {
    const hub = await startMcpHub();
    const legacy = new LegacyClient({ name: 'legacy-test', version: '1.0.0' });
    await legacy.connect(new LegacyHttpTransport(new URL(hub.url), { requestInit: { headers: hub.auth } }));
    const auto = await connectHttp(hub.url, { headers: hub.auth, mode: 'auto' });
    expect(auto.getProtocolEra()).toBe('modern');
    const [old, modern] = await Promise.all([
      legacy.callTool({ name: 'run_task', arguments: { command: process.execPath, args: [fixture('quick.mjs')], input: { n: 1 } } }),
      callTool(auto, 'run_task', { command: process.execPath, args: [fixture('quick.mjs')], input: { n: 2 } }),
    ]);
    expect(old.structuredContent).toMatchObject({ state: 'succeeded', result: { n: 1 } });
    expect(modern.value).toMatchObject({ state: 'succeeded', result: { n: 2 } });
    await legacy.close();
  });
});
