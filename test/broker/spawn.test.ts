import { describe, expect, test } from 'vitest';
import { resolveCommand } from '../../src/broker/process/spawn-agent.js';
import { fixture, makeBroker } from '../helpers/core.js';

describe('command resolution', () => {
  test('inside Electron, JS agents run as Node through the app binary', () => {
    const electron = { execPath: '/opt/Backchannel/backchannel', electron: true };
    expect(resolveCommand('agent.mjs', ['a'], electron)).toEqual({
      file: '/opt/Backchannel/backchannel',
      args: ['agent.mjs', 'a'],
      env: { ELECTRON_RUN_AS_NODE: '1', ELECTRON_NO_ASAR: '1' },
    });
    expect(resolveCommand('node', ['-e', '1'], electron).file).toBe('/opt/Backchannel/backchannel');
    expect(resolveCommand('python3', ['x.py'], electron)).toEqual({ file: 'python3', args: ['x.py'], env: {} });
  });

  test('under plain Node, node and .js/.ts files use this very Node, with no Electron variables', () => {
    expect(resolveCommand('node', [])).toEqual({ file: process.execPath, args: [], env: {} });
    const ts = resolveCommand('agent.ts', ['x']);
    expect(ts.file).toBe(process.execPath);
    expect(ts.args[0]).toBe('--import');
    expect(ts.args.slice(2)).toEqual(['agent.ts', 'x']);
  });
});

describe('token budget', () => {
  test('a start waits for budget and the reported usage settles it', async () => {
    // Capacity 100 and no refill: the second task (estimate 80) can start only after the first
    // reports it used 10 tokens (70 refunded).
    const { broker } = makeBroker({ concurrency: 4, tokenBudget: { capacity: 100, refillPerSecond: 0 } });
    const order: string[] = [];
    broker.on('update', (u) => (u.kind === 'started' || u.kind === 'ended') && order.push(`${u.kind}:${u.taskId}`));
    const script = `import { runAgent } from 'backchannel-agents/agent-runtime';
      runAgent(async (task) => { task.meta({ token_usage: { input: 4, output: 6 } }); return 'ok'; });`;
    const spec = { command: 'node', args: ['--input-type=module', '-e', script], cwd: fixture('.'), taskIdArg: false, estimatedTokens: 80 };
    const first = broker.submit(spec);
    const second = broker.submit(spec);
    await Promise.all([first.result, second.result]);
    expect(order.indexOf(`started:${second.id}`)).toBeGreaterThan(order.indexOf(`ended:${first.id}`));
  });
});
