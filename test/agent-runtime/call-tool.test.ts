/**
 * The TypeScript SDK's `task.callTool` under a real broker: it gives up on its `signal` and its
 * `timeout` (the caller's late answer is then refused), and it needs the socket (stdout mode cannot
 * call tools). Content, errors and parallel calls: test/client/tool-calls.test.ts.
 */
import { describe, expect, test } from 'vitest';
import type { ToolDefinition } from '../../src/model/task.js';
import { fixture, makeBroker, waitFor } from '../helpers/core.js';

const READ: ToolDefinition = { name: 'Read', input_schema: { type: 'object' } };
const node = process.execPath;

describe('callTool in the agent runtime', () => {
  test('gives up on its timeout and on its signal, each call on its own', async () => {
    const { broker } = makeBroker();
    const timed = broker.submit({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read' }], timeout: 200 },
      tools: [READ],
    });
    expect((await timed.result).data).toEqual({ offered: ['Read'], results: [{ error: 'tool call Read got no result within 200 ms' }] });
    const aborted = broker.submit({
      command: node,
      args: [fixture('tool-caller.mjs')],
      input: { calls: [{ name: 'Read' }], abortMs: 200 },
      tools: [READ],
    });
    expect((await aborted.result).data).toEqual({ offered: ['Read'], results: [{ error: 'tool call Read aborted' }] });
    // The call waited on the broker until the attempt ended; a late answer now finds nothing to answer.
    const dropped = (await waitFor(() => broker.logOf(aborted.id).find((l) => l.text.includes('no longer wait')), 'the dropped call')).text;
    expect(dropped).toContain('1 tool call(s) no longer wait (call_1)');
    expect(broker.answerToolCall(aborted.id, 'call_1', { content: 'late' })).toBe(false);
  });

  test('without a socket (stdout mode) a call is refused at once', async () => {
    const { broker } = makeBroker();
    // A wrapper breaks the hand-off path before the SDK connects: the agent reports on stdout.
    const script = [
      "process.env.CURSOR_IPC_PATH = '/nonexistent/dir/x.sock';",
      "const { connectTask } = await import('backchannel-agents/agent-runtime');",
      'const task = await connectTask();',
      "const refused = await task.callTool('Read', {}).then(() => 'answered', (error) => error.message);",
      'await task.succeed({ refused, offered: task.tools.length });',
    ].join('\n');
    const task = broker.submit({
      command: node,
      args: ['--input-type=module', '-e', script],
      cwd: fixture('.'),
      taskIdArg: false,
      tools: [READ],
    });
    const result = await task.result;
    expect(result.meta?.channel).toBe('stdout');
    expect(result.data).toEqual({ refused: 'cannot call a tool: no connection to the broker (stdout mode)', offered: 0 });
  });
});
