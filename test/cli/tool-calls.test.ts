/**
 * `tasks` and `show` say what a task waiting on its caller's tools waits for (`waiting for <tool>`),
 * and stop saying it once the call is answered. A real hub (`backchannel serve`), a real SDK agent,
 * the CLI as processes; the task is started and answered through the hub's client.
 */
import { describe, expect, test } from 'vitest';
import { openClient } from '../../src/client/index.js';
import { fixture, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

describe('the task commands and tool calls', () => {
  test('tasks and show say `waiting for <tool>` while a call waits, and no more once it is answered', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const client = await openClient({ withoutHub: 'refuse', env: hub.env });
    try {
      const task = await client.run({
        command: process.execPath,
        args: [fixture('tool-caller.mjs')],
        label: 'calls two tools',
        input: { calls: [{ name: 'Read' }, { name: 'Write' }] },
        tools: [
          { name: 'Read', input_schema: { type: 'object' } },
          { name: 'Write', input_schema: { type: 'object' } },
        ],
      });
      const calls = await waitFor(
        () => (task.snapshot().pendingToolCalls?.length === 2 ? task.snapshot().pendingToolCalls : undefined),
        'both calls',
      );

      const listed = await cli(['tasks'], hub.env);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`${task.id}\\s+running \\(waiting for Read, Write\\)\\s+.*calls two tools`));
      const shown = await cli(['show', task.id], hub.env);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/^waiting\s+waiting for Read, Write \(2 calls, the first since \d{4}-\d\d-\d\dT[\d:.]+Z\)$/m);
      const json = JSON.parse((await cli(['show', task.id, '--json'], hub.env)).stdout) as { task: { pendingToolCalls: unknown[] } };
      expect(json.task.pendingToolCalls).toHaveLength(2);

      for (const call of calls!) await task.answerToolCall(call.callId, { content: 'done' });
      await task.result;
      expect((await cli(['tasks'], hub.env)).stdout).toMatch(new RegExp(`${task.id}\\s+succeeded\\s`));
      expect((await cli(['show', task.id], hub.env)).stdout).not.toContain('waiting for');
    } finally {
      await client.close();
    }
  });
});
