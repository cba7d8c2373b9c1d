/**
 * The real claude-agent-acp (pinned; it runs the Claude Code it bundles) as an ACP task on a hub,
 * against the fake Anthropic server: a scripted model makes it edit a file, its permission request
 * is answered with `backchannel answer` (allow writes, reject leaves the file), cancel mid-turn ends
 * the whole tree, usage and cost arrive, and a follow-up continues the same session.
 * Run as root, it answers session/new only with IS_SANDBOX=1 in its environment.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { blocksOf, startFakeAnthropic, type FakeAnthropic, type FakeAnthropicRequest, type FakeTurn } from '../helpers/fake-anthropic.js';
import { clientFor } from '../helpers/real-clients.js';
import { cli } from '../hub/control/hub-process.js';
import { acpHub, answer, pendingQuestion, project, startAgentTask, treeGone, waited, type AgentEntry } from './acp-real.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeAgentAcp);

const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

function agent(fake: FakeAnthropic): AgentEntry {
  return {
    command: claude.bin,
    env: {
      HOME: tempDir('bc-acp-claude-home-'),
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: 'k-fake',
      IS_SANDBOX: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    },
  };
}

const toolResults = (request: FakeAnthropicRequest) =>
  (request.body.messages ?? []).flatMap((m) => blocksOf(m)).filter((b) => b.type === 'tool_result').length;

/** Read the file (Claude Code writes only files it read), then write "new", then say so. */
function editing(file: string) {
  return (request: FakeAnthropicRequest): FakeTurn => {
    const results = toolResults(request);
    if (results === 0) return { tool: { name: 'Read', input: { file_path: file } } };
    if (results === 1) return { tool: { name: 'Write', input: { file_path: file, content: 'new\n' } } };
    return { text: 'Done editing.' };
  };
}

async function fake(options: Parameters<typeof startFakeAnthropic>[0]): Promise<FakeAnthropic> {
  const started = await startFakeAnthropic(options);
  fakes.push(started);
  return started;
}

describe.skipIf(claude.skip !== undefined)(claude.title, { timeout: 240_000 }, () => {
  test('allow writes the file, reject leaves it; usage and cost arrive', async () => {
    const { dir, file } = project('bc-acp-claude-');
    const model = await fake({ script: editing(file) });
    const hub = await acpHub({ claude: agent(model) });

    const allowed = await startAgentTask(hub, 'claude', dir, 'Change hello.txt to say new');
    const question = await pendingQuestion(hub, allowed);
    expect(question.question).toMatch(/^needs approval: Write hello\.txt/);
    expect(question.approval).toMatchObject({ kind: 'edit', locations: [file] });
    expect(question.choices).toEqual(['Always Allow', 'Allow', 'Reject']);
    await answer(hub, allowed, 'Allow');
    const done = await waited(hub, allowed);
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(fs.readFileSync(file, 'utf8')).toBe('new\n');
    expect(done.data).toMatchObject({ text: 'Done editing.', stop_reason: 'end_turn' });
    expect(done.data.approvals).toEqual([expect.objectContaining({ kind: 'edit', option_id: 'allow', decision: 'allowed', by: 'answer' })]);
    expect(done.meta.token_usage).toEqual({ input: expect.any(Number), output: expect.any(Number) });
    expect(done.meta.token_usage.input).toBeGreaterThan(0);
    expect(done.meta.cost_usd).toBeGreaterThan(0);

    fs.writeFileSync(file, 'old\n');
    const rejected = await startAgentTask(hub, 'claude', dir, 'Change hello.txt to say new');
    await pendingQuestion(hub, rejected);
    await answer(hub, rejected, 'Reject');
    const after = await waited(hub, rejected);
    await treeGone(dir); // nothing of either task is left running
    expect(fs.readFileSync(file, 'utf8')).toBe('old\n');
    expect(after.data.approvals).toEqual([expect.objectContaining({ decision: 'rejected', by: 'answer' })]);
  });

  test('cancel in the middle of a turn ends the task and the agent’s whole process tree', async () => {
    const { dir } = project('bc-acp-claude-cancel-');
    const model = await fake({ hang: true });
    const hub = await acpHub({ claude: agent(model) });
    const id = await startAgentTask(hub, 'claude', dir, 'Think about hello.txt');
    // The model holds the turn's request: the agent is mid-turn, waiting on it.
    await waitFor(() => model.requests.some((r) => (r.body.tools ?? []).length > 0), 'the agent’s model request', 90_000, 100);
    expect((await cli(['cancel', id], hub.env)).code).toBe(0);
    const done = await waited(hub, id);
    expect(done.status).toBe('cancelled');
    await treeGone(dir);
  });

  test('a follow-up continues the same session', async () => {
    const { dir } = project('bc-acp-claude-follow-');
    const model = await fake({
      script: (request) => {
        const said = JSON.stringify(request.body.messages ?? []);
        return { text: said.includes('what was the colour') ? `You said: ${said.includes('teal') ? 'teal' : 'nothing'}` : 'Noted.' };
      },
    });
    const hub = await acpHub({ claude: agent(model) });
    const first = await startAgentTask(hub, 'claude', dir, 'my favourite colour is teal');
    const earlier = await waited(hub, first);
    expect(earlier.status, JSON.stringify(earlier)).toBe('success');
    const next = await startAgentTask(hub, 'claude', dir, 'what was the colour?', ['--follow-up', first]);
    const later = await waited(hub, next);
    await treeGone(dir);
    expect(later.status, JSON.stringify(later)).toBe('success');
    expect(later.data.text).toBe('You said: teal');
    expect(later.data.session_id).toBe(earlier.data.session_id);
    expect(later.meta.acp.continued_by).toMatch(/^(resume|load)$/);
  });
});
