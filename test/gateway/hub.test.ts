/**
 * `backchannel gateway` as a front-end of the hub, all real processes: a `backchannel serve` hub, a
 * `backchannel gateway` that finds it, requests whose tasks run in the hub (listed by `backchannel
 * tasks`, streamed back delta by delta), a client that leaves, a gateway that is killed, a hub that
 * is killed and started again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { tempDir, waitFor, waitUntilGone } from '../helpers/core.js';
import { cli, hubEnv, printed, start, startHub, type HubEnv, type Proc } from '../hub/control/hub-process.js';
import { raw, slowPids, standinModels, userMessage } from './helpers.js';

/** Directories of this file's gateways: their stand-ins' pids, killed after each test whatever happened. */
const gatewayDirs: string[] = [];
afterEach(() => {
  for (const { pid, grandchild } of gatewayDirs.splice(0).flatMap((dir) => slowPids(dir))) {
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

async function tasksOf(env: NodeJS.ProcessEnv): Promise<TaskSnapshot[]> {
  const { code, stdout, stderr } = await cli(['tasks', '--json', '--limit', '100'], env);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as TaskSnapshot[];
}

/** `backchannel gateway` (no key, port 0) over the stand-in models; resolves with its base URL once it listens. */
async function startGateway(hub: HubEnv, args: string[] = []): Promise<{ proc: Proc; baseURL: string; dir: string }> {
  const dir = tempDir('bc-gw-hub-');
  gatewayDirs.push(dir);
  const config = path.join(dir, 'gateway.yaml');
  fs.writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: standinModels(dir) }));
  const proc = start(['gateway', '--config', config, ...args], hub.env);
  const baseURL = await printed(proc, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
  return { proc, baseURL, dir };
}

const streamed = (events: { data: any }[]): string =>
  events
    .filter((e) => e.data !== '[DONE]')
    .map((e) => e.data.choices?.[0]?.delta?.content ?? '')
    .join('');

describe('the gateway on a running hub', () => {
  test('a streamed answer comes from a task the hub runs, delta by delta; tasks lists it as the gateway’s; /health names the hub', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub);
    expect(gateway.proc.stdout()).toContain(`Tasks run on the hub at ${hub.socket}`);

    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', stream: true, messages: userMessage('ping') });
    expect(res.status).toBe(200);
    expect(streamed(res.events)).toBe('Hello: ping');
    // Every partial reaches the client as its own delta (the follow stream is not coalesced).
    expect(res.events.slice(1, 3).map((e) => e.data.choices[0].delta.content)).toEqual(['Hel', 'lo']);
    const id = res.headers['x-backchannel-task-id'] as string;

    const task = (await tasksOf(hub.env)).find((t) => t.id === id);
    expect(task).toMatchObject({ state: 'succeeded', tags: { source: 'gateway', model: 'echo', api: 'chat' } });
    expect(task!.label).toBe('gateway echo: ping');

    const health = await raw(`${gateway.baseURL.replace(/\/v1$/, '')}/health`);
    expect(health.json).toMatchObject({
      status: 'ok',
      runs_on: `hub ${hub.socket}`,
      tasks: { running: 0, queued: 0 },
      // What the hub's task endpoints refused or failed to accept (issue 36 item 3).
      connections: { refused: 0, accept_errors: 0, last_accept_error: null },
    });
  });

  test('a bridged run on the hub: the tool call, its result, the same task; /health counts the run after it ended', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub);
    const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: {} } } }];
    const messages: unknown[] = userMessage('Read the file.');
    const first = await raw(`${gateway.baseURL}/chat/completions`, { model: 'bridge', messages, tools });
    expect(first.status, first.text).toBe(200);
    const message = first.json.choices[0].message;
    expect(message.tool_calls).toHaveLength(1);
    messages.push(message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'contents' });
    const done = await raw(`${gateway.baseURL}/chat/completions`, { model: 'bridge', messages, tools });
    expect(done.json.choices[0].message.content).toBe('done: "contents"');
    expect(done.headers['x-backchannel-task-id']).toBe(first.headers['x-backchannel-task-id']);
    const health = await raw(`${gateway.baseURL.replace(/\/v1$/, '')}/health`);
    expect(health.json.bridge).toEqual({ runs: 1, active: 0, suspended: 0, violations: 0, corrections: 0 });
  });

  test('a 2 MB prompt is answered on the hub as in the gateway (the hub takes what the gateway takes)', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub);
    const prompt = 'big prompt '.repeat(200_000); // 2.2 MB
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', messages: userMessage(prompt) });
    expect(res.status, JSON.stringify(res.json)?.slice(0, 300)).toBe(200);
    expect(res.json.choices[0].message.content).toBe(`Hello: ${prompt}`);
  });

  test('a client that leaves cancels its hub task; a gateway killed mid-request makes the hub cancel it', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub);
    const left = await raw(
      `${gateway.baseURL}/chat/completions`,
      { model: 'slow', stream: true, messages: userMessage('leave') },
      {
        onEvent: (event) => event.data?.choices?.[0]?.delta?.content === 'working',
      },
    );
    expect(streamed(left.events)).toBe('working');
    const leftId = left.headers['x-backchannel-task-id'] as string;
    await waitFor(async () => (await tasksOf(hub.env)).find((t) => t.id === leftId)?.state === 'cancelled', 'the task to be cancelled');
    expect((await tasksOf(hub.env)).find((t) => t.id === leftId)?.message).toContain('the client disconnected');

    const pending = raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage('orphaned') });
    // Running, with its pids written (the stand-in writes them before its first partial).
    await waitFor(() => slowPids(gateway.dir).length === 2, 'the second stand-in to start');
    gateway.proc.child.kill('SIGKILL');
    await pending.catch(() => undefined); // the connection breaks
    await waitFor(
      async () => (await tasksOf(hub.env)).find((t) => t.label.endsWith('orphaned'))?.state === 'cancelled',
      'the hub to cancel the orphaned task',
    );
    expect((await tasksOf(hub.env)).find((t) => t.label.endsWith('orphaned'))?.message).toContain(
      'the front-end that started it went away',
    );
    // Both agents and their children are stopped by the hub, not left behind.
    const pids = slowPids(gateway.dir);
    expect(pids).toHaveLength(2);
    await waitUntilGone(
      pids.flatMap((p) => [p.pid, p.grandchild]),
      10_000,
    );
  });

  test('a hub killed mid-request: the request fails with 503 at once, the next says nothing listens, a new hub is found again', async () => {
    const hub = hubEnv();
    const first = await startHub(hub);
    const gateway = await startGateway(hub);
    const pending = raw(`${gateway.baseURL}/chat/completions`, { model: 'slow', messages: userMessage('hold') });
    await waitFor(() => slowPids(gateway.dir).length === 1, 'the stand-in to start');
    first.child.kill('SIGKILL');
    fs.writeFileSync(path.join(gateway.dir, 'release'), ''); // the hub's orphaned stand-in ends itself
    const failed = await pending;
    expect(failed.status).toBe(503);
    expect(failed.json.error.message).toMatch(
      /The gateway could not run the sub-agent: The Backchannel hub \(control endpoint .*\) is gone/,
    );

    const none = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', messages: userMessage('anyone?') });
    expect(none.status).toBe(503);
    expect(none.json.error.message).toContain(
      `The Backchannel hub (control endpoint ${hub.socket}) is gone: nothing listens there any more`,
    );

    await startHub(hub);
    const back = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', messages: userMessage('again') });
    expect(back.status).toBe(200);
    expect(back.json.choices[0].message.content).toBe('Hello: again');
    expect((await tasksOf(hub.env)).some((t) => t.id === back.headers['x-backchannel-task-id'])).toBe(true);
    await waitUntilGone(
      slowPids(gateway.dir).flatMap((p) => [p.pid, p.grandchild]),
      10_000,
    );
  });

  test('--local keeps the tasks in the gateway even when a hub runs', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub, ['--local']);
    expect(gateway.proc.stdout()).toContain('Tasks run in this process');
    const res = await raw(`${gateway.baseURL}/chat/completions`, { model: 'echo', messages: userMessage('local') });
    expect(res.json.choices[0].message.content).toBe('Hello: local');
    expect(await tasksOf(hub.env)).toEqual([]);
  });

  test("bridge mode on the hub: the agent's tool call goes to the client and its result back, one hub task for the turn", async () => {
    const hub = hubEnv();
    await startHub(hub);
    const gateway = await startGateway(hub);
    const tools = [
      { type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
    ];
    const messages: unknown[] = [{ role: 'user', content: 'Read it.' }];
    const first = await raw(`${gateway.baseURL}/chat/completions`, { model: 'bridge', tools, messages });
    expect(first.status, first.text).toBe(200);
    const message = first.json.choices[0].message;
    expect(first.json.choices[0].finish_reason).toBe('tool_calls');
    expect(JSON.parse(message.tool_calls[0].function.arguments)).toEqual({ path: 'a.txt' });
    messages.push(message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'on the hub' });
    const second = await raw(`${gateway.baseURL}/chat/completions`, { model: 'bridge', tools, messages });
    expect(second.json.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'done: "on the hub"' } });
    const id = first.headers['x-backchannel-task-id'];
    expect(second.headers['x-backchannel-task-id']).toBe(id);
    const task = (await tasksOf(hub.env)).find((t) => t.id === id);
    expect(task).toMatchObject({ state: 'succeeded', tags: { mode: 'bridge' } });
  });
});
