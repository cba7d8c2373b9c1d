/** start_task's arguments, over a stand-in bridge: a preset by name (or its old name `template`), or a command. */
import { describe, expect, test } from 'vitest';
import type { BackchannelBridge, BridgeInfo, SubmitRequest } from '../../src/bridge/contract.js';
import { startTask } from '../../src/mcp/tools.js';

function bridge(): { bridge: BackchannelBridge; submitted: SubmitRequest[] } {
  const submitted: SubmitRequest[] = [];
  const info: BridgeInfo = {
    version: '0',
    mode: 'headless',
    logPath: '/dev/null',
    paused: false,
    presets: [{ name: 'progress', description: 'a demo', request: { command: '/demo/agent.mjs', args: ['--mode=progress'] } }],
    recent: [],
  };
  const fake = {
    info: async () => info,
    submit: async (request: SubmitRequest) => {
      submitted.push(request);
      return { id: `t${submitted.length}` };
    },
  } as unknown as BackchannelBridge;
  return { bridge: fake, submitted };
}

describe('startTask', () => {
  test("a preset runs its request, with the caller's extra args after its own", async () => {
    const { bridge: b, submitted } = bridge();
    expect(await startTask(b, { preset: 'progress', args: ['--steps=2'] })).toBe('t1');
    expect(submitted[0]).toMatchObject({
      command: '/demo/agent.mjs',
      args: ['--mode=progress', '--steps=2'],
      label: 'mcp: progress',
      tags: { source: 'mcp' },
    });
  });

  test('`template`, the old name of `preset`, is still accepted', async () => {
    const { bridge: b, submitted } = bridge();
    await startTask(b, { template: 'progress' });
    expect(submitted[0]).toMatchObject({ command: '/demo/agent.mjs', label: 'mcp: progress' });
  });

  test('an unknown preset, or neither a preset nor a command, is refused with what to give', async () => {
    const { bridge: b } = bridge();
    await expect(startTask(b, { preset: 'nope' })).rejects.toThrow('No preset named "nope"');
    await expect(startTask(b, {})).rejects.toThrow('Give either `preset` (a preset name) or `command`');
  });

  test('a budget given to start_task is the request’s maxTokens, maxCostUsd and maxTurns', async () => {
    const { bridge: b, submitted } = bridge();
    await startTask(b, { preset: 'progress', max_tokens: 5000, max_cost_usd: 0.5, max_turns: 4 });
    expect(submitted[0]).toMatchObject({ maxTokens: 5000, maxCostUsd: 0.5, maxTurns: 4 });
  });
});
