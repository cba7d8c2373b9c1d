/**
 * Fault table, issue 47 item 1 (Y55): a hub SIGKILLed while a task's agent runs, and started again
 * while that agent still works. The task reads `running` (recovering) through every door — the
 * task list, the gateway's Responses retrieve, MCP — is not retried meanwhile, and ends once with its
 * real outcome: `wait --json` returns it, the gateway says `completed` with the whole answer, MCP
 * says `succeeded`, and exactly one `ended` webhook goes out, saying `succeeded`. All real processes
 * (`backchannel serve`, `gateway`, `mcp`, `wait`, `retry`), a real HTTP receiver for the webhooks.
 */
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import OpenAI from 'openai';
import { afterEach, describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { BIN, cli, hubEnv, printed, start, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { slowPids, standinModels } from '../gateway/helpers.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const closers: Array<() => Promise<unknown>> = [];
const standinDirs: string[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  for (const { pid, grandchild } of standinDirs.splice(0).flatMap((dir) => slowPids(dir))) {
    for (const id of [pid, grandchild]) {
      try {
        // Only if that pid is still a stand-in of ours (not a reused pid).
        const command = fs.readFileSync(`/proc/${id}/cmdline`, 'utf8');
        if (command.includes('agent.mjs') || command.includes('setInterval')) process.kill(id, 'SIGKILL');
      } catch {
        // already gone, as it should be
      }
    }
  }
});

/** A webhook receiver on loopback: every body it got, in order. */
async function receiver(): Promise<{ url: string; bodies: Array<{ type: string; data: { task: Partial<TaskSnapshot> } }> }> {
  const bodies: Array<{ type: string; data: { task: Partial<TaskSnapshot> } }> = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      bodies.push(JSON.parse(text));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies };
}

async function startGateway(hub: HubEnv, dir: string): Promise<OpenAI> {
  const config = path.join(dir, 'gateway.yaml');
  fs.writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: standinModels(dir) }));
  const proc = start(['gateway', '--config', config], hub.env);
  const baseURL = await printed(proc, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
  return new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
}

async function mcp(env: NodeJS.ProcessEnv): Promise<(name: string, args: Record<string, unknown>) => Promise<any>> {
  const client = new Client({ name: 'backchannel-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    env: env as Record<string, string>,
    cwd: ROOT,
  });
  await client.connect(transport);
  closers.push(() => client.close());
  return async (name, args) => {
    const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
    return JSON.parse((result.content[0] as { text: string }).text);
  };
}

async function taskOf(env: NodeJS.ProcessEnv, id: string): Promise<TaskSnapshot | undefined> {
  const { code, stdout, stderr } = await cli(['tasks', '--json', '--limit', '100'], env);
  expect(code, stderr).toBe(0);
  return (JSON.parse(stdout) as TaskSnapshot[]).find((t) => t.id === id);
}

describe.skipIf(process.platform !== 'linux')('a task whose agent outlives the hub', () => {
  test('reads running (recovering) through every door, is not retried, and ends once with its real outcome: wait, MCP, Responses, one webhook', async () => {
    const hub = hubEnv();
    const hook = await receiver();
    fs.appendFileSync(
      hub.env.BACKCHANNEL_CONFIG!,
      `notify:\n  webhooks:\n    - url: ${hook.url}\n      events: [ended]\n      secret: ${SECRET}\n`,
    );
    const first = await startHub(hub);
    const dir = tempDir('bc-recovering-');
    standinDirs.push(dir);
    const gateway = await startGateway(hub, dir);
    const created = await gateway.responses.create({ model: 'slow', input: 'outlive the hub', background: true });
    await waitFor(() => slowPids(dir).length === 1, 'the slow agent to start');
    const [{ pid }] = slowPids(dir) as [{ pid: number }];
    const id = fs
      .readdirSync(dir)
      .find((name) => name.endsWith('.json'))!
      .slice(0, -'.json'.length);
    expect(created.id).toBe(`resp_${id.replace(/-/g, '')}`);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = new URL((await startHub(hub)).url);
    const panel = (route: string, init?: RequestInit) =>
      fetch(`${second.origin}/api/${route}?token=${second.searchParams.get('token')}`, init);
    // The task list (`tasks`, and the panel's API): running, recovering, its agent's pid.
    expect(await taskOf(hub.env, id)).toMatchObject({ state: 'running', recovering: true, pid });
    expect((await cli(['show', id], hub.env)).stdout).toMatch(/state\s+running \(recovering\)/);
    const listed = (await (await panel('tasks')).json()) as TaskSnapshot[];
    expect(listed.find((t) => t.id === id)).toMatchObject({ state: 'running', recovering: true });
    // The panel's Retry: refused, as a running task's is.
    const panelRetry = await panel(`tasks/${id}/retry`, { method: 'POST' });
    expect(panelRetry.status).toBe(409);
    expect(await panelRetry.text()).toContain(`Task ${id} is still running`);
    // The gateway, once it reaches the new hub: in progress, never `failed`.
    const status = await waitFor(
      () =>
        gateway.responses.retrieve(created.id).then(
          (r) => r.status,
          () => undefined,
        ),
      'the gateway to answer from the new hub',
    );
    expect(status).toBe('in_progress');
    const ask = await mcp(hub.env);
    expect(await ask('get_task', { task_id: id })).toMatchObject({ state: 'running' });
    // Retry would run it twice at once: refused, saying why and what to do.
    const retry = await cli(['retry', id], hub.env);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain(`Task ${id} is still running`);
    const wait = start(['wait', '--json', id], hub.env);
    const mcpWait = ask('wait_for_task', { task_id: id, timeout_seconds: 50 });

    fs.writeFileSync(path.join(dir, 'release'), '');
    expect(await wait.exited).toBe(0);
    expect(JSON.parse(wait.stdout())).toMatchObject({ status: 'success', data: { text: 'working, done' } });
    expect(await mcpWait).toMatchObject({ state: 'succeeded' });
    const done = await gateway.responses.retrieve(created.id);
    expect(done).toMatchObject({ status: 'completed', output_text: 'working, done' });
    expect(await taskOf(hub.env, id)).toMatchObject({ state: 'succeeded', result: { meta: { channel: 'spool' } } });

    // Exactly one `ended` for it, saying how it really ended. A later task's webhook marks "all sent by now".
    await waitFor(() => hook.bodies.some((b) => b.data.task.id === id), 'its ended webhook', 30_000);
    const later = (await cli(['run', '--detach', '--', fixture('quick.mjs')], hub.env)).stdout.trim();
    await waitFor(() => hook.bodies.some((b) => b.data.task.id === later), 'the later task’s webhook', 30_000);
    expect(hook.bodies.filter((b) => b.data.task.id === id).map((b) => [b.type, b.data.task.state])).toEqual([['ended', 'succeeded']]);
  }, 120_000);
});
