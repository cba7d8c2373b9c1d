import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeBroker } from '../helpers/core.js';
import { runTask, startTask } from '../helpers/broker.js';
import { acpCase, nextQuestion, script } from './acp-helpers.js';

describe('terminal/* only where allowed, and the bridge as an MCP server', () => {
  test('without settings.terminal, terminal/* is not served', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(
      broker,
      acp.spec(script([{ terminal: { command: 'echo', args: ['hi'] } }]), { settings: { approvals: { execute: 'allow' } } }),
    );
    expect((done.payload!.data as any).text).toMatch(/^\[terminal refused: .*Method not found/);
  });

  test('with it, a command runs in the task directory once the execute approval allows it', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const run = startTask(broker, acp.spec(script([{ terminal: { command: 'pwd' } }]), { settings: { terminal: true } }));
    const question = await nextQuestion(run.handle);
    expect(question.question).toBe('needs approval: run a command pwd');
    expect(question.approval).toMatchObject({ kind: 'execute', command: 'pwd' });
    broker.answer(run.handle.id, question.askId, 'allow');
    const done = await run.done;
    expect((done.payload!.data as any).text).toBe(`[terminal exit 0: ${acp.cwd}]`);
  });

  test('a rejected command does not run', async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const done = await runTask(
      broker,
      acp.spec(script([{ terminal: { command: 'touch', args: ['ran'] } }]), {
        settings: { terminal: true, approvals: { execute: 'reject' } },
      }),
    );
    expect((done.payload!.data as any).text).toMatch(/^\[terminal refused: .*not approved\]$/);
    expect(existsSync(path.join(acp.cwd, 'ran'))).toBe(false);
  });

  test("bridge mode offers the client's tools to the agent as an MCP server in session/new", async () => {
    const { broker } = makeBroker();
    const acp = acpCase();
    const bridge = { mcpServer: { command: '/usr/bin/node', args: ['relay.js'], env: { X: '1' } } };
    const done = await runTask(broker, acp.spec(script([{ mcpServers: true }]), { settings: { bridge } }));
    expect((done.payload!.data as any).text).toBe('[mcp: backchannel:/usr/bin/node]');
  });
});
