/**
 * MCP over HTTP on `serve` offers what MCP over stdio offers on the same hub: the hub's presets in `list_tasks`, and
 * `run_task {"preset": …}` runs one (the HTTP mount was built from a client that held no presets: `presets: []`, and
 * the preset refused). Real processes: `backchannel serve` and a `backchannel mcp` attached to it, the official SDK
 * v2 client on both transports.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { hubEnv, printed, start } from '../hub/control/hub-process.js';
import { callTool, connectHttp, connectStdio } from './modern-client.js';

describe('MCP over HTTP and over stdio on one hub', () => {
  test('the same tool calls give the same presets, and a preset runs through both', async () => {
    const hub = hubEnv();
    const serve = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
    const url = await printed(serve, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
    const token = await printed(serve, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
    const http = await connectHttp(url, { headers: { Authorization: `Bearer ${token}` } });
    const stdio = await connectStdio(hub);

    const [overHttp, overStdio] = await Promise.all([callTool(http, 'list_tasks', {}), callTool(stdio, 'list_tasks', {})]);
    const names = (listed: { value: { presets: { name: string }[] } }): string[] => listed.value.presets.map((p) => p.name);
    expect(names(overStdio)).toContain('progress');
    expect(overHttp.value.presets).toEqual(overStdio.value.presets);

    const runs = await Promise.all([http, stdio].map((client) => callTool(client, 'run_task', { preset: 'progress' })));
    for (const run of runs) {
      expect(run.isError, JSON.stringify(run.value)).toBe(false);
      expect(run.value).toMatchObject({ state: 'succeeded' });
    }
  });
});
