/**
 * Issue 38.11: `backchannel mcp` printed `MaxListenersExceededWarning … 11 abort listeners` after `tasks/list`.
 * The leak was the SDK v1's `tasks/result`, which added an abort listener to the request's signal at each 500 ms
 * poll (src/mcp/task-results.ts now waits on the task's own handle). Here a real process, a 2025-11-25 client,
 * a `tasks/result` waiting about six seconds while `tasks/list` is called again and again: nothing on stderr.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, ROOT } from '../helpers/core.js';
import { BIN, hubEnv, startHub } from '../hub/control/hub-process.js';

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

describe('abort listeners', () => {
  test('a long tasks/result beside many tasks/list calls leaves no MaxListenersExceededWarning', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' });
    let stderr = '';
    transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'leak-test', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    const params = {
      name: 'run_task',
      arguments: { command: process.execPath, args: [fixture('sleeper.mjs')], input: { ms: 6_000 } },
      task: {},
    };
    const { task } = await client.request({ method: 'tools/call', params }, CreateTaskResultSchema);
    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 60_000 });
    let lists = 0;
    let ended = false;
    void result.finally(() => (ended = true));
    while (!ended && lists < 200) {
      await client.experimental.tasks.listTasks();
      lists += 1;
    }
    expect((await result).structuredContent).toMatchObject({ state: 'succeeded' });
    expect(lists).toBeGreaterThan(11);
    // One more round trip: a warning printed by the last calls has reached stderr by its answer.
    await client.experimental.tasks.listTasks();
    expect(stderr).not.toContain('MaxListenersExceededWarning');
  });
});
