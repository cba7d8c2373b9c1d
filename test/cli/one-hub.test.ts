/**
 * Issue 22 item 5, real processes: an MCP host starts `backchannel mcp` with the MCP SDK's default
 * environment (HOME, PATH, … — no XDG_RUNTIME_DIR). It used to miss the hub `serve` started with a
 * full environment, become a second broker on the same history, mark the hub's running task
 * interrupted and stop its agent. Now the control endpoint lives in the data directory (derived from
 * HOME), every front-end finds the hub there, and a data directory a broker holds is never opened
 * twice.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { readLockHolder } from '../../src/broker/history/data-dir-lock.js';
import { BrokerHost } from '../helpers/broker-host.js';
import { fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { BIN, cli, printed, start, type Proc } from '../hub/control/hub-process.js';
import { standinModels } from '../gateway/helpers.js';
import { anyCommandConfig } from '../helpers/run-policy.js';

const TICKS = path.join(ROOT, 'test/cli/fixtures/ticks.mjs');

interface Home {
  dir: string;
  /** The data directory every process here derives from HOME. */
  dataDir: string;
  /** A login session's environment: HOME, XDG_RUNTIME_DIR and everything else (no XDG_STATE_HOME, no BACKCHANNEL_CONTROL). */
  full: NodeJS.ProcessEnv;
  /** What an MCP host passes: HOME and PATH only (TMPDIR keeps a mistaken broker's sockets private to the test). */
  bare: Record<string, string>;
}

function home(): Home {
  const dir = tempDir('bc-1hub-');
  const homeDir = path.join(dir, 'home');
  const run = path.join(dir, 'run');
  const tmp = path.join(dir, 'tmp');
  for (const d of [homeDir, run, tmp]) mkdirSync(d, { mode: 0o700 });
  // Both config homes (XDG_CONFIG_HOME, ~/.config) allow the fixtures MCP starts (docs/run-policy.md).
  for (const d of [path.join(dir, 'config', 'backchannel'), path.join(homeDir, '.config', 'backchannel')]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    anyCommandConfig(d);
  }
  const { XDG_STATE_HOME: _state, BACKCHANNEL_CONTROL: _control, CURSOR_IPC_DIR: _ipc, ...rest } = process.env;
  return {
    dir,
    dataDir: path.join(homeDir, '.local', 'state', 'backchannel'),
    full: { ...rest, HOME: homeDir, XDG_RUNTIME_DIR: run, XDG_CONFIG_HOME: path.join(dir, 'config'), TMPDIR: tmp },
    bare: { HOME: homeDir, PATH: process.env.PATH!, TMPDIR: tmp },
  };
}

async function serve(h: Home, args: string[] = []): Promise<Proc> {
  const proc = start(['serve', '--port', '0', ...args], h.full);
  await printed(proc, /Backchannel panel: (\S+)/, 'serve to print its URL');
  return proc;
}

async function tasksOf(env: NodeJS.ProcessEnv): Promise<TaskSnapshot[]> {
  const { code, stdout, stderr } = await cli(['tasks', '--json', '--limit', '100'], env);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as TaskSnapshot[];
}

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

async function mcpClient(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const client = new Client({ name: 'backchannel-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => err };
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
  const text = (result.content[0] as { text: string }).text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

describe('one hub per data directory, found without the runtime directory', () => {
  test('backchannel mcp with a bare environment (HOME, PATH) attaches to the hub serve started with XDG_RUNTIME_DIR: it lists and answers the hub task, which is never interrupted and succeeds; bare run, tasks and gateway find the hub too', async () => {
    const h = home();
    const hub = await serve(h);
    expect(lstatSync(path.join(h.dataDir, 'control.sock')).isSocket()).toBe(true);
    const detached = await cli(
      ['run', '--detach', '--label', 'held by the hub', '--input', '{"ticks":3,"hold":true}', '--', TICKS],
      h.full,
    );
    expect(detached.code, detached.stderr).toBe(0);
    const id = detached.stdout.trim();
    await waitFor(async () => (await tasksOf(h.full)).find((t) => t.id === id)?.pendingQuestion, 'the hub task to ask');

    const { client } = await mcpClient(h.bare);
    const listed = await call(client, 'list_tasks', {});
    expect(listed.tasks).toEqual(expect.arrayContaining([expect.objectContaining({ task_id: id, state: 'running' })]));
    // The MCP process is a client: the data directory is still the hub's alone.
    expect(await readLockHolder(h.dataDir)).toMatchObject({ pid: hub.child.pid });

    // A bare `tasks` and `run` go to the same hub.
    expect((await tasksOf(h.bare)).find((t) => t.id === id)?.state).toBe('running');
    const quick = await cli(['run', '--json', '--label', 'bare run', '--', fixture('quick.mjs')], h.bare);
    expect(quick.code, quick.stderr).toBe(0);
    expect((await tasksOf(h.full)).map((t) => t.label)).toContain('bare run');

    // A bare gateway runs its requests on the hub.
    const config = path.join(h.dir, 'gateway.yaml');
    writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: standinModels(h.dir) }));
    const gateway = start(['gateway', '--config', config], h.bare);
    await printed(gateway, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
    expect(gateway.stdout()).toContain(`Tasks run on the hub at ${path.join(h.dataDir, 'control.sock')}`);

    expect(await call(client, 'answer_question', { task_id: id, answer: 'yes' })).toEqual({ task_id: id, answered: true });
    const waited = await call(client, 'wait_for_task', { task_id: id, timeout_seconds: 30 });
    expect(waited).toMatchObject({ state: 'succeeded', done: true, result: { ticks: 3 } });
    expect((await tasksOf(h.full)).find((t) => t.id === id)).toMatchObject({ state: 'succeeded' });
    expect(readFileSync(path.join(h.dataDir, 'journal.ndjson'), 'utf8')).not.toContain('interrupted');
  });

  test('a second serve on the same data directory (another port) exits 1 at once with one line naming the directory and the holder pid, and writes nothing there', async () => {
    const h = home();
    const hub = await serve(h);
    const log = path.join(h.dataDir, 'logs', 'backchannel.log');
    const before = { listing: readdirSync(h.dataDir).sort(), log: readFileSync(log) };
    // "At once" against a CLI start of the same run (machines and loads differ): no wait, no retry.
    const baseStart = Date.now();
    await cli(['config', 'path'], h.full);
    const baseline = Date.now() - baseStart;
    const started = Date.now();
    const second = await cli(['serve', '--port', '0'], h.full);
    expect(second.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(5 * baseline + 3000);
    expect(second.stdout).toBe('');
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stderr).toContain(
      `backchannel serve: Data directory ${h.dataDir} is in use by another Backchannel broker (pid ${hub.child.pid}`,
    );
    expect(readdirSync(h.dataDir).sort()).toEqual(before.listing);
    expect(readFileSync(log)).toEqual(before.log);
    expect(await tasksOf(h.bare)).toEqual([]);
  });

  test('backchannel mcp on a data directory a broker without a hub holds refuses with the holder pid (never a second broker); once that broker is SIGKILLed, mcp becomes the hub and bare clients find it', async () => {
    const h = home();
    mkdirSync(h.dataDir, { recursive: true, mode: 0o700 });
    chmodSync(h.dataDir, 0o700);
    const holder = await BrokerHost.start({ dataDir: h.dataDir, ipcDir: path.join(h.dir, 'ipc') });
    // It holds at its question until killed: still running however slow the machine makes the checks below.
    const id = await holder.submit({ command: TICKS, input: { ticks: 2, hold: true } });
    await waitFor(async () => ((await holder.get(id))?.progress ?? 0) > 0, 'the task to run');

    const refused = await cli(['mcp'], h.bare);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `backchannel mcp: Data directory ${h.dataDir} is in use by another Backchannel broker (pid ${holder.pid})`,
    );
    // The task commands refuse too rather than show its running task as interrupted.
    const tasks = await cli(['tasks'], h.bare);
    expect(tasks.code).toBe(1);
    expect(tasks.stderr).toContain(`belongs to a running Backchannel broker (pid ${holder.pid})`);
    expect(await holder.get(id)).toMatchObject({ state: 'running' });

    await holder.kill();
    const { client } = await mcpClient(h.bare);
    const own = await call(client, 'start_task', { command: fixture('quick.mjs'), label: 'on the mcp hub' });
    expect(await call(client, 'wait_for_task', { task_id: own.task_id, timeout_seconds: 30 })).toMatchObject({ state: 'succeeded' });
    const seen = await tasksOf(h.bare);
    expect(seen.find((t) => t.id === own.task_id)).toMatchObject({ state: 'succeeded' });
    expect(seen.find((t) => t.id === id)).toMatchObject({ state: 'interrupted' });
  });
});
