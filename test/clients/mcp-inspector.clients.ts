/**
 * The MCP Inspector's CLI mode (pinned) against `backchannel mcp` on a real hub: its `--tool-arg key=value`
 * arguments are typed from the tool's JSON Schema, so an object `input` reaches the sub-agent as an object.
 */
import { describe, expect, test } from 'vitest';
import { fixture } from '../helpers/core.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { BIN, hubEnv, startHub } from '../hub/control/hub-process.js';
import { PINS } from './pins.js';

const inspector = clientFor(PINS.mcpInspector);

describe.skipIf(inspector.skip !== undefined)(`${inspector.title} --cli`, () => {
  test('tools/list shows typed arguments; tools/call with input={"path":"."} hands the agent an object', async () => {
    const hub = hubEnv();
    await startHub(hub);
    // The Inspector starts the server with a default environment plus what `-e` names: the hub's
    // endpoint and config (whose run policy lets this fixture run) go with it.
    const passed = Object.entries(hub.env).filter(([name, value]) => /^(BACKCHANNEL_|XDG_|CURSOR_IPC_DIR$)/.test(name) && value);
    const server = ['--cli', ...passed.flatMap(([name, value]) => ['-e', `${name}=${value}`]), process.execPath, BIN, 'mcp'];
    const run = (args: string[]) => runCli(inspector.bin, [...server, ...args], { cwd: hub.dir, env: hub.env });

    const listed = await run(['--method', 'tools/list']);
    expect(listed.code, listed.stderr).toBe(0);
    const start = (JSON.parse(listed.stdout) as { tools: Array<{ name: string; inputSchema: any }> }).tools.find(
      (t) => t.name === 'start_task',
    );
    expect(start?.inputSchema.properties.input.type).toBe('object');

    const called = await run([
      '--method',
      'tools/call',
      '--tool-name',
      'run_task',
      '--tool-arg',
      `command=${fixture('sdk-progress.mjs')}`,
      '--tool-arg',
      'input={"path":"."}',
    ]);
    expect(called.code, called.stderr).toBe(0);
    const result = JSON.parse(called.stdout) as { isError: boolean; structuredContent: any };
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ state: 'succeeded', result: { echo: { path: '.' } } });
  });
});
