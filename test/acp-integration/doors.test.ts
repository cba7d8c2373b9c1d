/**
 * An ACP agent run as a task from every door, end to end with real processes: the ACP adapter
 * (dist/acp/main.js) and the fixture ACP agent (test/fixtures/acp/agent.mjs), `backchannel run`
 * without a hub, and a hub started with `serve` whose config names the agent (`acp: agents:`):
 * `run --acp-agent` with an approval answered by `answer`, `stats` counting the decisions, MCP
 * `start_task` of the named agent's preset (and the X1 refusal of anything else), a schedule of it,
 * and `--follow-up` continuing the session after the hub restarted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { ROOT, tempDir, waitFor } from '../helpers/core.js';
import { cli, hubEnv, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { callTool, connectStdio } from '../mcp/modern-client.js';
import { makeRepo } from '../helpers/git-repo.js';

const AGENT = path.join(ROOT, 'test/fixtures/acp/agent.mjs');

/** A prompt the fixture agent plays as steps (test/fixtures/acp/agent.mjs). */
function script(steps: unknown[], words = 'do it'): string {
  return JSON.stringify(`${words} SCRIPT:${JSON.stringify(steps)}`);
}

/** A hub whose config names the fixture agent `fixture`, its sessions kept in `sessions`. */
function acpHub(): HubEnv & { sessions: string } {
  const hub = hubEnv();
  const sessions = path.join(hub.dir, 'sessions');
  const yaml = [
    'acp:',
    '  agents:',
    `    fixture: { command: ${JSON.stringify(AGENT)}, env: { ACP_FIXTURE_STATE: ${JSON.stringify(sessions)} }, prompt: "nightly check" }`,
  ].join('\n');
  fs.writeFileSync(hub.env.BACKCHANNEL_CONFIG!, `${yaml}\n`);
  return { ...hub, sessions };
}

async function pendingQuestion(hub: HubEnv, id: string): Promise<NonNullable<TaskSnapshot['pendingQuestion']>> {
  return waitFor(async () => {
    const { stdout } = await cli(['tasks', '--json'], hub.env);
    return (JSON.parse(stdout) as TaskSnapshot[]).find((t) => t.id === id)?.pendingQuestion;
  }, 'the approval');
}

async function waited(hub: HubEnv, id: string): Promise<{ status: string; data: Record<string, any> }> {
  return JSON.parse((await cli(['wait', '--json', id], hub.env)).stdout);
}

describe('an ACP agent from every door', { timeout: 180_000 }, () => {
  test('run --acp without a hub: the agent’s answer is the result', async () => {
    const env = { ...hubEnv().env };
    const done = await cli(['run', '--local', '--json', '--acp', '--input', '"hello"', '--', AGENT], env);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'success', data: { text: 'echo: hello', stop_reason: 'end_turn' } });
  });

  test('--on-budget stop ends the task at the cap, its work kept; --acp-agent and --on-budget refuse bad input', async () => {
    const env = { ...hubEnv().env };
    const steps = [{ say: 'half done' }, { usage: { cost: 3 } }, { sleep: 5000 }, { say: 'never said' }];
    const stopped = await cli(
      ['run', '--local', '--json', '--acp', '--on-budget', 'stop', '--max-cost-usd', '2', '--input', script(steps), '--', AGENT],
      env,
    );
    expect(stopped.code).toBe(1);
    const payload = JSON.parse(stopped.stdout);
    expect(payload).toMatchObject({ reason: 'budget_exceeded' });
    expect(JSON.stringify(payload)).toContain('half done');

    const unknown = await cli(['run', '--acp-agent', 'nobody'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('backchannel run: no ACP agent named "nobody" (agents: none');
    const later = await cli(['run', '--acp', '--on-budget', 'later', '--', AGENT], env);
    expect(later.code).toBe(2);
    expect(later.stderr).toContain('--on-budget expects pause or stop, got "later"');
  });

  test('--worktree: the agent writes in its own worktree, and the change is captured', async () => {
    const hub = acpHub();
    fs.appendFileSync(hub.env.BACKCHANNEL_CONFIG!, '  approvals: { cli: { edit: allow } }\n');
    const repo = makeRepo();
    const steps = [{ write: { path: 'NOTES.md', content: 'from the agent\n' } }];
    const done = await cli(
      ['run', '--local', '--json', '--worktree', '--acp-agent', 'fixture', '--cwd', repo, '--input', script(steps)],
      hub.env,
    );
    expect(done.code, done.stderr).toBe(0);
    const payload = JSON.parse(done.stdout);
    expect(payload.data.text).toContain('[wrote NOTES.md]');
    expect(fs.existsSync(path.join(repo, 'NOTES.md'))).toBe(false);
    const diff = await cli(['diff', payload.task_id], hub.env);
    expect(diff.stdout).toContain('+from the agent');
  });

  test('run --acp-agent on a hub: approvals answered with answer, counted by stats', async () => {
    const hub = acpHub();
    await startHub(hub);
    const work = tempDir();
    const writes = (file: string) => script([{ permission: { id: file, write: { path: file, content: 'approved\n' } } }]);

    const allowed = (
      await cli(['run', '--detach', '--acp-agent', 'fixture', '--cwd', work, '--input', writes('a.md')], hub.env)
    ).stdout.trim();
    const question = await pendingQuestion(hub, allowed);
    expect((await cli(['tasks'], hub.env)).stdout).toMatch(new RegExp(`${allowed}\\s+needs approval\\s`));
    expect(question.approval).toMatchObject({ kind: 'edit', locations: [path.join(fs.realpathSync(work), 'a.md')] });
    expect((await cli(['answer', allowed, '1'], hub.env)).code).toBe(0);
    const allowedResult = (await waited(hub, allowed)) as { status: string; meta: Record<string, any> };
    expect(allowedResult.status).toBe('success');
    expect(allowedResult.meta.approval_answers).toEqual([
      { tool_call_id: 'a.md', option_id: 'allow-once', via: 'cli', at: expect.any(String) },
    ]);
    expect(fs.readFileSync(path.join(work, 'a.md'), 'utf8')).toBe('approved\n');

    const rejected = (
      await cli(['run', '--detach', '--acp-agent', 'fixture', '--cwd', work, '--input', writes('b.md')], hub.env)
    ).stdout.trim();
    await pendingQuestion(hub, rejected);
    expect((await cli(['answer', rejected, 'Reject'], hub.env)).code).toBe(0);
    await waited(hub, rejected);
    expect(fs.existsSync(path.join(work, 'b.md'))).toBe(false);

    const stats = JSON.parse((await cli(['stats', '--data-dir', path.join(hub.dir, 'data'), '--json'], hub.env)).stdout) as {
      approvals?: unknown;
    };
    expect(stats.approvals).toEqual([{ agent: 'agent.mjs', asked: 2, allowed: 1, rejected: 1, unanswered: 0 }]);
    expect((await cli(['stats', '--data-dir', path.join(hub.dir, 'data')], hub.env)).stdout).toMatch(
      /ACP approvals[\s\S]*agent\.mjs\s+2\s+1\s+1\s+0/,
    );
  });

  test('a cost cap pauses on a hub and asks; raising it continues the same session, stop keeps the work', async () => {
    const hub = acpHub();
    await startHub(hub);
    const spend = script([{ say: 'part one' }, { usage: { cost: 3 } }, { sleep: 2000 }, { say: 'part two' }]);
    const raised = (
      await cli(['run', '--detach', '--acp-agent', 'fixture', '--max-cost-usd', '2', '--input', spend], hub.env)
    ).stdout.trim();
    const raise = await pendingQuestion(hub, raised);
    expect(raise.question).toMatch(/^budget reached \(\$3(\.00)? of \$2(\.00)?\): raise the cap \/ stop$/);
    expect((await cli(['answer', raised, '1'], hub.env)).code).toBe(0);
    const continued = await waited(hub, raised);
    expect(continued.status).toBe('success');
    expect(continued.data.text).toContain('part one');

    const stopped = (
      await cli(['run', '--detach', '--acp-agent', 'fixture', '--max-cost-usd', '2', '--input', spend], hub.env)
    ).stdout.trim();
    await pendingQuestion(hub, stopped);
    expect((await cli(['answer', stopped, 'stop'], hub.env)).code).toBe(0);
    const ended = JSON.parse((await cli(['wait', '--json', stopped], hub.env)).stdout);
    expect(ended).toMatchObject({ status: 'error', reason: 'budget_exceeded' });
    // The work so far is kept with the failure: what the agent said before the cap, not after.
    expect(ended.payload.data).toMatchObject({ text: 'part one', code: 'budget_exceeded' });
  });

  test('MCP start_task runs the named agent’s preset, and refuses another command line beside it (X1)', async () => {
    const hub = acpHub();
    await startHub(hub);
    const mcp = await connectStdio(hub);
    const listed = await callTool(mcp, 'list_tasks', {});
    expect(listed.value.presets.map((p: { name: string }) => p.name)).toContain('acp:fixture');
    const run = await callTool(mcp, 'run_task', { preset: 'acp:fixture', input: { prompt: 'hi from MCP' } });
    expect(run.isError, JSON.stringify(run.value)).toBe(false);
    expect(JSON.stringify(run.value)).toContain('echo: hi from MCP');
    const smuggled = await callTool(mcp, 'start_task', { preset: 'acp:fixture', args: ['--evil'] });
    expect(smuggled.isError).toBe(true);
    expect(JSON.stringify(smuggled.value)).toMatch(/refused/);
  });

  test('a schedule of the named agent runs it as an ACP task', async () => {
    const hub = acpHub();
    await startHub(hub);
    const added = await cli(['schedule', 'add', 'nightly', '--every', '1h', '--preset', 'acp:fixture'], hub.env);
    expect(added.code, added.stderr).toBe(0);
    const id = (await cli(['schedule', 'run-now', 'nightly'], hub.env)).stdout.trim();
    const done = await waited(hub, id);
    expect(done).toMatchObject({ status: 'success', data: { text: 'echo: nightly check', stop_reason: 'end_turn' } });
  });

  test('--follow-up continues the session, also after the hub restarted', async () => {
    const hub = acpHub();
    const first = await startHub(hub);
    const earlier = (
      await cli(['run', '--detach', '--acp-agent', 'fixture', '--input', '"my favourite colour is teal"'], hub.env)
    ).stdout.trim();
    expect((await waited(hub, earlier)).status).toBe('success');
    first.child.kill('SIGTERM');
    await first.exited;
    await startHub(hub);
    const next = await cli(
      ['run', '--json', '--acp-agent', 'fixture', '--follow-up', earlier, '--input', script([{ recall: true }], 'what was it?')],
      hub.env,
    );
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ data: { text: 'I remember: my favourite colour is teal' } });
  });
});
