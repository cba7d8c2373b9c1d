/**
 * The broker's ACP kind (src/broker/acp/) under a real broker, with a stand-in adapter that reports
 * what it was launched with: the adapter's command line and BACKCHANNEL_ACP for each door, the caps
 * a paused budget moves to the adapter, named agents (their environment on their own command line
 * only), the X1 refusals (nothing of the program, its arguments or its environment from a request
 * or an input), Retry, and a follow-up's session — after a broker restart too.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AcpOptions } from '../../src/broker/acp/index.js';
import { BrokerError } from '../../src/broker/errors.js';
import type { TaskSpec } from '../../src/model/task.js';
import { checkTaskRequest } from '../../src/model/task-request.js';
import { specOfRequest } from '../../src/model/spec-wire.js';
import { ownerRunPolicy } from '../../src/hub/run-policy.js';
import { acpAgentPresets } from '../../src/hub/acp-agents.js';
import type { LoadedConfig } from '../../src/config/file.js';
import { createTestBroker, tempDir } from '../helpers/core.js';
import { startTask } from '../helpers/broker.js';

const PROBE = path.resolve('test/acp-integration/fixtures/adapter-probe.mjs');
/** The agent the probe stands in front of: never run (the probe is the adapter). */
const AGENT = '/opt/agents/acp-agent.mjs';

interface Probe {
  argv: string[];
  settings: Record<string, unknown> & { approvals: Record<string, string> };
  secret: string | null;
}

function config(dir: string, sections: LoadedConfig['sections']): LoadedConfig {
  return { path: path.join(dir, 'config.yaml'), exists: true, sections };
}

const OWNER: LoadedConfig['sections'] = {
  acp: {
    agents: { probe: { command: 'node', args: [AGENT, '--acp'], env: { ACP_PROBE_SECRET: 'from-the-config' } } },
    approvals: { default: { edit: 'allow' }, mcp: { execute: 'reject' } },
  },
};

function broker(acp: AcpOptions = {}, options: Parameters<typeof createTestBroker>[0] = {}) {
  return createTestBroker({ acp: { adapter: PROBE, ...acp }, ...options });
}

async function probe(b: ReturnType<typeof broker>, spec: TaskSpec): Promise<Probe> {
  const done = await startTask(b.broker, spec).done;
  if (!done.payload) throw done.error ?? new Error('no result');
  return done.payload.data as Probe;
}

describe('an ACP task', () => {
  it('runs the agent under the adapter with the owner’s own terminal settings', async () => {
    const b = broker();
    const cwd = tempDir();
    const result = await probe(b, { command: 'agent.mjs', args: ['--x'], cwd, acp: true, origin: 'cli', input: 'hi' });
    expect(result.argv.slice(1)).toEqual(['--', path.join(cwd, 'agent.mjs'), '--x']);
    expect(result.argv[0]).toMatch(/^--task-id=/);
    expect(result.settings).toMatchObject({ door: 'cli', onBudget: 'pause', terminal: true });
    expect(result.settings.approvals).toMatchObject({ read: 'allow', search: 'allow', edit: 'ask', execute: 'ask', other: 'ask' });
  });

  it('resolves the approvals for its door, and no terminal outside the owner’s run', async () => {
    const dir = tempDir();
    const parsed = acpAgentPresets(config(dir, OWNER));
    expect(parsed.map((p) => p.name)).toEqual(['acp:probe']);
    const b = broker({ approvals: { default: { edit: 'allow' }, mcp: { execute: 'reject' } } });
    const result = await probe(b, { command: 'node', args: [AGENT], acp: true, origin: 'mcp' });
    expect(result.settings).toMatchObject({ door: 'mcp', terminal: false });
    expect(result.settings.approvals).toMatchObject({ edit: 'allow', execute: 'reject', read: 'allow', fetch: 'ask' });
  });

  it('leaves a paused cost cap to the adapter, and enforces it itself with --on-budget stop', async () => {
    const b = broker();
    const paused = await startTask(b.broker, { command: 'node', args: [AGENT], acp: true, maxCostUsd: 0.5, input: { cost: 2 } }).done;
    expect(paused.snapshot.state).toBe('succeeded');
    expect((paused.payload!.data as Probe).settings).toMatchObject({ onBudget: 'pause', maxCostUsd: 0.5 });
    const stopped = await startTask(b.broker, {
      command: 'node',
      args: [AGENT],
      acp: { onBudget: 'stop' },
      maxCostUsd: 0.5,
      input: { cost: 2 },
    }).done;
    expect(stopped.error?.reason).toBe('budget_exceeded');
  });

  it('takes the config’s on_budget when the task says nothing', async () => {
    const b = broker({ onBudget: 'stop' });
    const result = await probe(b, { command: 'node', args: [AGENT], acp: true, maxTokens: 100 });
    expect(result.settings.onBudget).toBe('stop');
    expect(result.settings.maxTokens).toBeUndefined();
  });

  it('gives a named agent its environment, on its own command line only', async () => {
    const dir = tempDir();
    const owner = config(dir, OWNER);
    const runPolicy = ownerRunPolicy({ config: owner, presets: acpAgentPresets(owner) });
    const b = broker(
      { agents: { probe: { command: 'node', args: [AGENT, '--acp'], env: { ACP_PROBE_SECRET: 'from-the-config' } } } },
      { runPolicy },
    );
    const preset = acpAgentPresets(owner)[0]!.request;
    const fromMcp = specOfRequest(checkTaskRequest({ ...preset, origin: 'mcp' }));
    const result = await probe(b, fromMcp);
    expect(result.secret).toBe('from-the-config');
    expect(result.settings.agentName).toBe('probe');
    expect(result.argv.slice(1)).toEqual(['--', 'node', AGENT, '--acp']);
    // The name on another command line: refused, never that agent's environment on another program.
    expect(() => b.broker.submit({ command: 'node', args: ['/tmp/other.mjs'], acp: { agent: 'probe' }, origin: 'cli' })).toThrow(
      /not the ACP agent "probe"/,
    );
    expect(() => b.broker.submit({ command: 'node', args: [AGENT], acp: { agent: 'nobody' }, origin: 'cli' })).toThrow(
      /no ACP agent named "nobody"/,
    );
  });
});

describe('X1: nothing of the program from a request or an input', () => {
  const dir = tempDir();
  const owner = config(dir, OWNER);

  function ownerBroker() {
    const runPolicy = ownerRunPolicy({ config: owner, presets: acpAgentPresets(owner) });
    return broker(
      { agents: { probe: { command: 'node', args: [AGENT, '--acp'], env: { ACP_PROBE_SECRET: 'from-the-config' } } } },
      { runPolicy },
    );
  }

  it('refuses acp fields that would name a program, arguments or environment', () => {
    for (const acp of [
      { command: 'sh' },
      { args: ['-c', 'id'] },
      { env: { NODE_OPTIONS: '--require /tmp/x.js' } },
      { agent: 'probe', program: 'sh' },
    ]) {
      expect(() => checkTaskRequest({ command: 'node', args: [AGENT, '--acp'], acp })).toThrow(/Unexpected `acp\./);
    }
  });

  it('refuses from MCP and the panel another command, more arguments or an environment beside a named agent', () => {
    const b = ownerBroker();
    const refused = (request: Record<string, unknown>) => {
      const spec = specOfRequest(checkTaskRequest(request));
      try {
        b.broker.submit(spec);
      } catch (error) {
        return error instanceof BrokerError && error.code === 'refused';
      }
      return false;
    };
    for (const origin of ['mcp', 'panel', 'schedule'] as const) {
      expect(refused({ command: 'sh', args: ['-c', 'id'], acp: { agent: 'probe' }, origin })).toBe(true);
      expect(refused({ command: 'node', args: [AGENT, '--acp', '--extra'], acp: { agent: 'probe' }, origin })).toBe(true);
      expect(refused({ command: 'node', args: [AGENT, '--acp'], acp: { agent: 'probe' }, env: { ACP_PROBE_SECRET: 'x' }, origin })).toBe(
        true,
      );
    }
  });

  it('never reads a program, an argument or a variable from the input', async () => {
    const b = ownerBroker();
    const preset = acpAgentPresets(owner)[0]!.request;
    const input = { prompt: 'hi', command: 'sh', args: ['-c', 'id'], env: { ACP_PROBE_SECRET: 'from-the-input' }, agent: 'other' };
    const result = await probe(b, specOfRequest(checkTaskRequest({ ...preset, input, origin: 'mcp' })));
    expect(result.argv.slice(1)).toEqual(['--', 'node', AGENT, '--acp']);
    expect(result.secret).toBe('from-the-config');
    expect(JSON.stringify(result.settings)).not.toMatch(/"sh"|-c|from-the-input|"agentName":"other"/);
  });
});

describe('a follow-up and a Retry of an ACP task', () => {
  it('continues the parent’s session, also after the broker restarted, and a Retry runs under the adapter again', async () => {
    const dataDir = tempDir();
    const first = broker({}, { dataDir });
    const parent = await startTask(first.broker, { command: 'node', args: [AGENT], acp: true, input: { session: 'sess-42' } }).done;
    const parentId = parent.handle.id;
    const live = await probe(first, { command: 'node', args: [AGENT], acp: true, parent: parentId });
    expect(live.settings.session).toEqual({ id: 'sess-42' });
    await first.close();

    const second = broker({}, { dataDir });
    await second.broker.ready;
    const restarted = await probe(second, { command: 'node', args: [AGENT], acp: true, parent: parentId });
    expect(restarted.settings.session).toEqual({ id: 'sess-42' });
    const retried = second.broker.retry(parentId);
    const payload = await retried.result;
    expect((payload.data as Probe).argv.slice(1)).toEqual(['--', 'node', AGENT]);
  });
});
