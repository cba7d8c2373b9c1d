/**
 * Every tool's annotations, pinned as a client reads them from `tools/list`: clients decide what to confirm with
 * the user by these hints, so a tool that writes into the user's checkout must say it is destructive.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, test } from 'vitest';
import type { BackchannelClient } from '../../src/client/index.js';
import { createMcpServer } from '../../src/mcp/server.js';

const READ_ONLY = { readOnlyHint: true, openWorldHint: false };
const STARTS_AGENT = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

const EXPECTED: Record<string, object> = {
  start_task: STARTS_AGENT,
  run_task: STARTS_AGENT,
  get_task: READ_ONLY,
  wait_for_task: READ_ONLY,
  list_tasks: READ_ONLY,
  get_task_log: READ_ONLY,
  get_task_diff: READ_ONLY,
  cancel_task: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  answer_question: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  apply_task_change: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  discard_task_change: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  list_schedules: READ_ONLY,
  // Each fire runs an arbitrary program, as start_task does; a schedule of the same name is replaced.
  create_schedule: STARTS_AGENT,
};

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const one of open.splice(0)) await one.close();
});

describe('tool annotations', () => {
  test('every one of the 13 tools carries exactly its pinned hints, apply_task_change destructive', async () => {
    // Listing tools calls nothing of the client.
    const mcp = createMcpServer({} as BackchannelClient, '0');
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await mcp.server.connect(serverSide);
    const client = new Client({ name: 'test', version: '0' });
    await client.connect(clientSide);
    open.push(client, mcp.server);
    const { tools } = await client.listTools();
    const seen = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations]));
    expect(seen).toEqual(EXPECTED);
    expect(seen.apply_task_change).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    mcp.dispose();
  });
});
