/**
 * Issue 23 item 5, real processes: a client sends `backchannel mcp` a message over 10 MiB. The SDK's
 * stdio reader closed the session on it and the process exited 0 without a word; when that process
 * was the hub, every task went with it. Now the message is answered with a JSON-RPC error (Invalid
 * Request, with the request's id), and the session, the hub and its tasks go on.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, test } from 'vitest';
import { lastTopLevelId, topLevelId } from '../../src/mcp/stdio-guard.js';
import { fixture, ROOT } from '../helpers/core.js';
import { BIN, cli, hubEnv } from '../hub/control/hub-process.js';

async function getTask(client: Client, id: string): Promise<{ isError: boolean; text: string }> {
  const result = await client.callTool({ name: 'get_task', arguments: { task_id: id } }, CallToolResultSchema, { timeout: 30_000 });
  return { isError: result.isError === true, text: (result.content[0] as { text: string }).text };
}

describe('an MCP message over the 10 MiB limit', () => {
  test('is answered with an Invalid Request error carrying its id; the mcp process (here the hub) and its running task go on', async () => {
    const hub = hubEnv();
    const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    const client = new Client({ name: 'backchannel-test', version: '1.0.0' });
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    await client.connect(transport);
    try {
      // No hub ran: this mcp process is the hub. The owner's own run gives it a task that runs until cancelled.
      const submitted = await cli(['run', '--detach', '--', process.execPath, fixture('cancellable.mjs')], hub.env);
      expect(submitted.code).toBe(0);
      const id = submitted.stdout.trim();

      const huge = 'x'.repeat(11 * 1024 * 1024);
      const refused = await client
        .callTool({ name: 'get_task', arguments: { task_id: huge } }, CallToolResultSchema, { timeout: 30_000 })
        .then(
          () => undefined,
          (error: { code?: number; message: string }) => error,
        );
      expect(refused?.code).toBe(-32600);
      expect(refused?.message).toMatch(/message of \d+ bytes exceeds the 10485760-byte limit of backchannel mcp; it was not read/);
      expect(stderr).toMatch(/backchannel mcp: message of \d+ bytes exceeds the 10485760-byte limit/);

      // The same session answers the next call, and the hub's task still runs.
      const task = await getTask(client, id);
      expect(task.isError).toBe(false);
      expect(JSON.parse(task.text)).toMatchObject({ task_id: id, state: 'running' });
      expect((await cli(['tasks', '--json'], hub.env)).stdout).toContain(`"state":"running"`);
    } finally {
      await client.close();
    }
  });

  test('the id is read from the first or last bytes of the message, at its top level only', () => {
    expect(topLevelId('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9')).toBe(7);
    expect(topLevelId('{"jsonrpc":"2.0","method":"tools/call","params":{"id":9,"x":"')).toBeUndefined();
    expect(topLevelId('{"method":"a \\"id\\": 3","id":"req-1","params":{')).toBe('req-1');
    expect(topLevelId('{"id":')).toBeUndefined();
    // The SDK's client writes the id last: only a member right before the final brace is the top level's.
    expect(lastTopLevelId('xxx"}},"jsonrpc":"2.0","id":12}\n')).toBe(12);
    expect(lastTopLevelId('xxx","id":12}}\n')).toBeUndefined();
    expect(lastTopLevelId('xxx"},"id":"a\\"b"}')).toBe('a"b');
  });
});
