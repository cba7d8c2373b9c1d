/**
 * The hub's mounts on a loopback port of their own (src/hub/http/mount-server.ts), as the desktop app serves MCP over
 * HTTP — composed exactly as src/main/main.ts composes it, without the Electron binary: a broker with a run policy,
 * the one client over it, the MCP token read or made (0600) and the mount `backchannel serve` uses. The official SDK
 * v2 client with the token lists the tools and runs a task; no token is 401, a foreign Host 421, a cross-site Origin
 * 403, another path 404; close() ends the mount and the server.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { RunPolicy } from '../../../src/broker/run-policy.js';
import { clientOf } from '../../../src/client/index.js';
import { startMountServer } from '../../../src/hub/http/mount-server.js';
import { MCP_PATH } from '../../../src/mcp/http-endpoint.js';
import { mcpHttpMount, readMcpToken } from '../../../src/mcp/http-mount.js';
import { fixture, makeBroker, tempDir } from '../../helpers/core.js';
import { callTool, connectHttp } from '../../mcp/modern-client.js';

/** A raw request to the server (fetch cannot set Host). */
async function status(url: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<number> {
  return (await fetch(url, init)).status;
}

describe('the mount server (MCP over HTTP in the desktop app)', () => {
  test("serves MCP at /mcp with serve's token and checks; refuses the rest; close() ends it", async () => {
    const runPolicy = new RunPolicy([{ command: fixture('quick.mjs'), moreArgs: true }]);
    const { broker } = makeBroker({ runPolicy });
    const env = { XDG_CONFIG_HOME: tempDir('bc-config-') };
    const token = readMcpToken(env);
    expect(token).toMatchObject({ created: true, file: path.join(env.XDG_CONFIG_HOME, 'backchannel', 'mcp-token') });
    expect(statSync(token.file).mode & 0o777).toBe(0o600);
    expect(readMcpToken(env)).toEqual({ ...token, created: false });

    const server = await startMountServer({ mounts: [mcpHttpMount(clientOf(broker), '0.0.0-test', token.secret)] });
    try {
      const url = server.urlOf(MCP_PATH);
      expect(url).toBe(`http://127.0.0.1:${server.port}/mcp`);
      const client = await connectHttp(url, { headers: { Authorization: `Bearer ${token.secret}` } });
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('create_schedule');
      const done = await callTool(client, 'run_task', { command: fixture('quick.mjs'), input: { n: 5 } });
      expect(done).toMatchObject({ isError: false, value: { state: 'succeeded', result: { n: 5 } } });
      // The run policy's mcp door: only what the owner allows.
      const refused = await callTool(client, 'run_task', { command: 'sh', args: ['-c', 'true'] });
      expect(refused.isError).toBe(true);
      await client.close();

      const post = { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } };
      expect(await status(url, { ...post, body: '{}' })).toBe(401);
      expect(await status(url, { ...post, headers: { ...post.headers, Origin: 'https://evil.example' }, body: '{}' })).toBe(403);
      expect(await status(server.urlOf('/elsewhere'))).toBe(404);
      const foreignHost = await new Promise<number>((resolve, reject) => {
        import('node:http')
          .then(({ request }) => {
            const req = request({ host: '127.0.0.1', port: server.port, path: MCP_PATH, headers: { Host: 'evil.example' } }, (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            });
            req.on('error', reject);
            req.end();
          })
          .catch(reject);
      });
      expect(foreignHost).toBe(421);
    } finally {
      await server.close();
      await broker.close();
    }
    await expect(fetch(server.urlOf(MCP_PATH))).rejects.toThrow();
  });
});
