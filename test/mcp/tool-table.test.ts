/** The tool table over a stand-in client: a failure is an `isError` result for people, with a client error's code in `_meta`. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test } from 'vitest';
import { BridgeError, type BackchannelClient } from '../../src/client/index.js';
import { ERROR_META_KEY, registerTools } from '../../src/mcp/tool-table.js';
import { TASK_TOOLS } from '../../src/mcp/tools.js';
import { taskSnapshot } from './task-snapshot.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const one of open.splice(0)) await one.close();
});

async function connect(client: Partial<BackchannelClient>): Promise<Client> {
  const server = new McpServer({ name: 'test', version: '0' });
  const context = { client: client as BackchannelClient, track: () => {}, elicits: () => false, progress: () => {} };
  registerTools(server, TASK_TOOLS, context);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const mcp = new Client({ name: 'test', version: '0' });
  await mcp.connect(clientSide);
  open.push(mcp, server);
  return mcp;
}

describe('tool errors', () => {
  test("a client error: its message as the text, and { code, message } in _meta['backchannel/error']", async () => {
    const message = 'No task with an id starting with "nope"';
    const mcp = await connect({
      resolveId: async () => {
        throw new BridgeError('not_found', message);
      },
    });
    const result = await mcp.callTool({ name: 'get_task', arguments: { task_id: 'nope' } }, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: message }]);
    expect(result._meta?.[ERROR_META_KEY]).toEqual({ code: 'not_found', message });
  });

  test('any other failure: the message alone, as the SDK sends a thrown error', async () => {
    const mcp = await connect({
      resolveId: async (id: string) => id,
      getTask: async () => ({ task: taskSnapshot({ id: 't1' }), log: [] }),
    });
    const result = await mcp.callTool({ name: 'answer_question', arguments: { task_id: 't1', answer: 'x' } }, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Task t1 is not waiting for an answer' }] });
    expect(result._meta).toBeUndefined();
  });
});
