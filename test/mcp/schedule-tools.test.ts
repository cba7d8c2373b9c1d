/**
 * The MCP schedule tools (src/mcp/schedule-tools.ts) over stdio, with the official SDK v2 client pinned to 2026-07-28
 * and the SDK v1 client (2025-11-25) — one table serves both — on a real hub (`backchannel serve`, which fires
 * schedules): create_schedule stores a schedule that fires and runs its command, list_schedules shows it with its last
 * run; a command the run policy does not allow at the `schedule` door is a tool error with its one line, and nothing
 * is stored; a bad duration or a schedule with neither command nor preset is a one-line tool error; a `backchannel mcp`
 * that became the hub itself serves them too.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { BIN, hubEnv, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { callTool, connectStdio } from './modern-client.js';

const legacyClients: LegacyClient[] = [];
afterEach(async () => {
  for (const client of legacyClients.splice(0)) await client.close().catch(() => {});
});

/** A hub whose config allows `quick.mjs` (any arguments) at every door, the `schedule` door among them. */
function hubAllowingQuick(): HubEnv {
  const hub = hubEnv();
  const file = path.join(hub.dir, 'owner-config.yaml');
  fs.writeFileSync(file, `run_policy:\n  allow:\n    - { command: ${JSON.stringify(fixture('quick.mjs'))}, more_args: true }\n`);
  hub.env.BACKCHANNEL_CONFIG = file;
  return hub;
}

async function connectLegacy(hub: HubEnv): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'backchannel-test', version: '1.0.0' });
  const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  await client.connect(new LegacyStdio({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' }));
  legacyClients.push(client);
  return client;
}

describe('list_schedules and create_schedule', () => {
  test('the v2 client creates a schedule every 2s; it fires and runs; list_schedules shows the run and its state', async () => {
    const hub = hubAllowingQuick();
    await startHub(hub);
    const client = await connectStdio(hub);
    expect(await callTool(client, 'list_schedules', {})).toEqual({ isError: false, value: { schedules: [] } });
    const created = await callTool(client, 'create_schedule', {
      name: 'tick',
      every: '2s',
      command: fixture('quick.mjs'),
      args: ['--n=1'],
    });
    expect(created).toMatchObject({
      isError: false,
      value: { name: 'tick', every_ms: 2000, command: [fixture('quick.mjs'), '--n=1'], overlap: 'skip', catch_up: 'latest', paused: false },
    });
    expect(Date.parse(created.value.next_fire_at)).not.toBeNaN();
    const ran = await waitFor(
      async () => {
        const [tick] = (await callTool(client, 'list_schedules', {})).value.schedules;
        return tick?.last_run?.state === 'succeeded' ? tick : undefined;
      },
      'a fire that ran to the end',
      60_000,
    );
    // The run is a task like any other: get_task shows it.
    expect((await callTool(client, 'get_task', { task_id: ran.last_run.task_id })).value).toMatchObject({ state: 'succeeded' });
  });

  test('a command the run policy does not allow at the schedule door is a tool error with its one line; nothing is stored', async () => {
    // The owner's defaults (no config file): presets and templates only.
    const hub = hubEnv();
    hub.env.BACKCHANNEL_CONFIG = path.join(hub.dir, 'no-config.yaml');
    await startHub(hub);
    const client = await connectStdio(hub);
    const mark = path.join(tempDir('bc-mark-'), 'pwned');
    const refused = await callTool(client, 'create_schedule', { name: 'evil', every: '1s', command: 'sh', args: ['-c', `touch ${mark}`] });
    expect(refused.isError).toBe(true);
    expect(refused.value).toContain(`refused \`sh -c touch ${mark}\``);
    expect(refused.value).not.toContain('\n');
    expect((await callTool(client, 'list_schedules', {})).value.schedules).toEqual([]);
    expect(fs.existsSync(mark)).toBe(false);
  });

  test('a backchannel mcp that became the hub itself serves the schedule tools too', async () => {
    const client = await connectStdio(hubEnv());
    expect(await callTool(client, 'list_schedules', {})).toEqual({ isError: false, value: { schedules: [] } });
  });

  test('the 2025-11-25 server has the same tools: a bad duration and a schedule with nothing to run are one-line errors', async () => {
    const hub = hubAllowingQuick();
    await startHub(hub);
    const client = await connectLegacy(hub);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['list_schedules', 'create_schedule']));
    const call = async (args: Record<string, unknown>) => {
      const result = await client.callTool({ name: 'create_schedule', arguments: args }, CallToolResultSchema);
      return { isError: result.isError, text: (result.content[0] as { text: string }).text };
    };
    expect(await call({ name: 'x', every: 'soon', command: fixture('quick.mjs') })).toEqual({
      isError: true,
      text: '`every` must be a duration such as 30s, 5m, 1h or 7d, got "soon"',
    });
    expect(await call({ name: 'x', every: '5m' })).toEqual({
      isError: true,
      text: 'Give either `preset` (a preset name) or `command` (the sub-agent each fire runs)',
    });
    const both = await call({ name: 'x', every: '5m', cron: '0 * * * *', command: fixture('quick.mjs') });
    expect(both.isError).toBe(true);
    expect(both.text).toContain('exactly one of --cron and --every');
  });
});
