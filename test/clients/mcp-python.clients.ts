/**
 * The official Python MCP SDK (pinned; pip from the configured index into a venv of its own) as a strict MCP
 * 2025-11-25 Tasks client of `backchannel mcp` on a real hub, every answer validated with its pydantic models
 * (./python/mcp_tasks_client.py): MCP Tasks end to end with an elicitation inside the task and status
 * notifications, tasks/list pagination, and tasks/cancel; and over the hub's Streamable HTTP endpoint
 * (./python/mcp_http_client.py) at the same time as the SDK v2 client in `auto` mode (MCP 2026-07-28).
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { fixture, ROOT } from '../helpers/core.js';
import { ensurePythonClients, runCli } from '../helpers/real-clients.js';
import { BIN, cli, hubEnv, printed, start, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { callTool, connectHttp } from '../mcp/modern-client.js';
import { TASKS_PAGE_SIZE } from '../../src/mcp/task-store.js';
import { PINS } from './pins.js';

const version = PINS.pythonMcp[1];
const client = ensurePythonClients([PINS.pythonMcp]);
const skip = 'skip' in client ? client.skip : undefined;
const SCRIPT = path.join(ROOT, 'test', 'clients', 'python', 'mcp_tasks_client.py');

/** Runs one scenario of the script against a new `backchannel mcp` on `hub`; what it saw. */
async function scenario(hub: HubEnv, name: string, env: Record<string, string> = {}): Promise<any> {
  if ('skip' in client) throw new Error(client.skip);
  const run = await runCli(client.python, [SCRIPT, name, path.dirname(fixture('quick.mjs')), process.execPath, BIN, 'mcp'], {
    cwd: hub.dir,
    env: { ...hub.env, ...env },
  });
  const seen = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  expect(seen.error, run.stderr.slice(-2000)).toBeUndefined();
  expect(run.code).toBe(0);
  return seen;
}

describe.skipIf(skip !== undefined)(`Python mcp==${version}${skip ? ` (skipped: ${skip})` : ''}`, () => {
  test('over HTTP, at once: the Python client (2025-11-25) and the SDK v2 client in auto mode (2026-07-28) on one hub', async () => {
    if ('skip' in client) throw new Error(client.skip);
    const hub = hubEnv();
    const serve = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
    const url = await printed(serve, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
    const token = await printed(serve, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
    const python = runCli(
      client.python,
      [path.join(ROOT, 'test', 'clients', 'python', 'mcp_http_client.py'), url, token, process.execPath, fixture('quick.mjs')],
      {
        cwd: hub.dir,
        env: hub.env,
      },
    );
    const modern = (async () => {
      const v2 = await connectHttp(url, { headers: { Authorization: `Bearer ${token}` }, mode: 'auto' });
      return {
        era: v2.getProtocolEra(),
        done: await callTool(v2, 'run_task', { command: process.execPath, args: [fixture('quick.mjs')], input: { n: 9 } }),
      };
    })();
    const [old, now] = await Promise.all([python, modern]);
    const seen = JSON.parse(old.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, any>;
    expect(seen.error, old.stderr.slice(-2000)).toBeUndefined();
    expect(seen).toMatchObject({ protocol: '2025-11-25', is_error: false, result: { state: 'succeeded', result: { n: 3 } } });
    expect(seen.tools).toHaveLength(13);
    expect(now.era).toBe('modern');
    expect(now.done.value).toMatchObject({ state: 'succeeded', result: { n: 9 } });
  });

  test('MCP Tasks end to end: handle, tasks/get, an elicitation inside the task, status notifications, tasks/result', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const seen = await scenario(hub, 'tasks');
    expect(seen.protocol).toBe('2025-11-25');
    expect(seen.task_support).toMatchObject({ run_task: 'optional', start_task: 'forbidden' });
    const taskId = seen.created.taskId as string;
    expect(seen.created).toMatchObject({ status: 'working', ttl: 60_000 });
    expect(seen.done).toMatchObject({ taskId, status: 'completed', ttl: 60_000 });
    expect(seen.result).toMatchObject({ state: 'succeeded', result: { answer: 'dev' } });
    expect(seen.result_meta).toEqual({ [seen.related_task_key]: { taskId } });
    expect(seen.elicited).toEqual([{ message: expect.stringContaining('Which branch'), meta: { [seen.related_task_key]: { taskId } } }]);
    const statuses = (seen.statuses as Array<{ status: string; lastUpdatedAt: string }>).map((s) => s.status);
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    for (const status of seen.statuses) expect(Date.parse(status.lastUpdatedAt)).toBeGreaterThan(Date.parse(seen.created.createdAt));
  });

  test('tasks/list: pages with nextCursor until the last; an unknown cursor is -32602', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const seen = await scenario(hub, 'pagination', { MCP_TEST_TASKS: String(TASKS_PAGE_SIZE + 1) });
    const pages = seen.pages as string[][];
    expect(pages.map((page) => page.length)).toEqual([TASKS_PAGE_SIZE, 1]);
    expect(new Set(pages.flat()).size).toBe(TASKS_PAGE_SIZE + 1);
    expect(seen.bad_cursor).toMatchObject({ code: -32602, message: expect.stringContaining('Unknown cursor') });
  });

  test('tasks/cancel: the task is cancelled at once, the hub stops its agent, a status notification says so', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const seen = await scenario(hub, 'cancel');
    expect(seen.cancelled).toMatchObject({ taskId: seen.task_id, status: 'cancelled' });
    expect(seen.statuses.map((s: { status: string }) => s.status)).toContain('cancelled');
    const shown = await cli(['show', '--json', seen.task_id], hub.env);
    expect(shown.stdout).toContain('"state":"cancelled"');
  });
});
