/**
 * What a model may run through `backchannel mcp` (the official SDK client over stdio, a real hub):
 * by default the presets and templates, never an arbitrary command line — a refusal is a tool error
 * (`isError`) that says why and how the owner allows more; the config file's `run_policy:` allows
 * more, with arguments and directories.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, ROOT, tempDir } from '../helpers/core.js';
import { BIN, hubEnv, startHub, type HubEnv } from '../hub/control/hub-process.js';

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

/** A hub environment whose config file says `config` (nothing: the defaults). */
function hubWithConfig(config?: string): HubEnv {
  const hub = hubEnv();
  const file = path.join(hub.dir, 'owner-config.yaml');
  if (config !== undefined) fs.writeFileSync(file, config);
  hub.env.BACKCHANNEL_CONFIG = file;
  return hub;
}

async function connect(hub: HubEnv): Promise<Client> {
  const client = new Client({ name: 'backchannel-test', version: '1.0.0' });
  const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' }));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; text: string }> {
  const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
  return { isError: result.isError === true, text: (result.content[0] as { text: string }).text };
}

describe('what backchannel mcp may run', () => {
  test('by default `run_task {command: "sh", args: ["-c", …], cwd: "/"}` is refused as a tool error, and nothing runs', async () => {
    const hub = hubWithConfig();
    await startHub(hub);
    const client = await connect(hub);
    const mark = path.join(tempDir('bc-mark-'), 'pwned');
    const refused = await call(client, 'run_task', { command: 'sh', args: ['-c', `touch ${mark}`], cwd: '/' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain(
      `refused \`sh -c touch ${mark}\` (in /) from an MCP client: not a template, a preset or a command the run policy allows`,
    );
    expect(refused.text).toContain(`run_policy: allow:\` in ${hub.env.BACKCHANNEL_CONFIG}`);
    const started = await call(client, 'start_task', { command: fixture('sdk-progress.mjs') });
    expect(started.isError).toBe(true);
    expect(fs.existsSync(mark)).toBe(false);
    // The history holds no task: a refusal registers nothing.
    const listed = JSON.parse((await call(client, 'list_tasks', {})).text) as { tasks: unknown[] };
    expect(listed.tasks).toEqual([]);
  });

  test('a preset runs by default; the same agent with other arguments does not', async () => {
    const hub = hubWithConfig();
    await startHub(hub);
    const client = await connect(hub);
    const ran = await call(client, 'run_task', { preset: 'progress', timeout_seconds: 60 });
    expect(ran.isError).toBe(false);
    expect(JSON.parse(ran.text)).toMatchObject({ state: 'succeeded' });
    const agent = path.join(ROOT, 'scripts', 'demo-agents', 'agent.mjs');
    const other = await call(client, 'run_task', { command: agent, args: ['--mode=crash'] });
    expect(other.isError).toBe(true);
    expect(other.text).toContain('refused');
  });

  test('the owner allows a command in the config file: its arguments as given, in the directories given', async () => {
    const agent = fixture('sdk-progress.mjs');
    const allowed = tempDir('bc-allowed-');
    const hub = hubWithConfig(
      `run_policy:\n  allow:\n    - { command: ${JSON.stringify(agent)}, more_args: true, dirs: [${JSON.stringify(allowed)}] }\n`,
    );
    await startHub(hub);
    const client = await connect(hub);
    const ran = await call(client, 'run_task', { command: agent, args: ['--x'], cwd: allowed, input: { prompt: 'hi' } });
    expect(ran.isError).toBe(false);
    expect(JSON.parse(ran.text)).toMatchObject({ state: 'succeeded' });
    const elsewhere = await call(client, 'run_task', { command: agent, cwd: ROOT });
    expect(elsewhere.isError).toBe(true);
    expect(elsewhere.text).toContain(`(in ${ROOT}) from an MCP client`);
  });
});
