/**
 * The real OpenCode (pinned) in its ACP mode (`opencode acp`) as an ACP task on a hub. Its model is
 * the fake Anthropic server through OpenCode's built-in Anthropic provider (`baseURL`), so nothing is
 * fetched at run time; its config asks before edits (`permission: {edit: "ask"}`). A scripted model
 * makes it edit a file, the permission request is answered with `backchannel answer`, cancel
 * mid-turn ends the whole tree, usage and cost arrive, and a follow-up continues the same session.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { blocksOf, startFakeAnthropic, type FakeAnthropic, type FakeAnthropicRequest, type FakeTurn } from '../helpers/fake-anthropic.js';
import { clientFor } from '../helpers/real-clients.js';
import { cli } from '../hub/control/hub-process.js';
import { acpHub, answer, pendingQuestion, project, startAgentTask, treeGone, waited, type AgentEntry } from './acp-real.js';
import { PINS } from './pins.js';

const opencode = clientFor(PINS.opencode);

const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function fake(options: Parameters<typeof startFakeAnthropic>[0]): Promise<FakeAnthropic> {
  const started = await startFakeAnthropic(options);
  fakes.push(started);
  return started;
}

/** `opencode acp` in private XDG directories, its config pointing the Anthropic provider at `model`. */
function agent(model: FakeAnthropic): AgentEntry {
  const home = tempDir('bc-acp-opencode-home-');
  const config = path.join(home, 'config', 'opencode');
  fs.mkdirSync(config, { recursive: true });
  fs.writeFileSync(
    path.join(config, 'opencode.json'),
    JSON.stringify({
      $schema: 'https://opencode.ai/config.json',
      provider: { anthropic: { options: { baseURL: `${model.url}/v1`, apiKey: 'k-fake' } } },
      model: 'anthropic/claude-sonnet-4-5',
      small_model: 'anthropic/claude-sonnet-4-5',
      permission: { edit: 'ask' },
    }),
  );
  const xdg = (name: string) => path.join(home, name);
  return {
    command: opencode.bin,
    args: ['acp'],
    env: {
      HOME: home,
      XDG_CONFIG_HOME: xdg('config'),
      XDG_DATA_HOME: xdg('data'),
      XDG_CACHE_HOME: xdg('cache'),
      XDG_STATE_HOME: xdg('state'),
      OPENCODE_DISABLE_AUTOUPDATE: '1',
    },
  };
}

const offersTools = (request: FakeAnthropicRequest) => (request.body.tools ?? []).length > 0;
const toolResults = (request: FakeAnthropicRequest) =>
  (request.body.messages ?? []).flatMap((m) => blocksOf(m)).filter((b) => b.type === 'tool_result').length;

/** Read the file, write "new", say so; its title request (no tools) gets a title. */
function editing(file: string) {
  return (request: FakeAnthropicRequest): FakeTurn => {
    if (!offersTools(request)) return { text: 'Edit hello' };
    const results = toolResults(request);
    if (results === 0) return { tool: { name: 'read', input: { filePath: file } } };
    if (results === 1) return { tool: { name: 'write', input: { filePath: file, content: 'new\n' } } };
    return { text: 'Done editing.' };
  };
}

describe.skipIf(opencode.skip !== undefined)(`${opencode.title} as an ACP agent`, { timeout: 240_000 }, () => {
  test('allow writes the file, reject leaves it; usage and cost arrive', async () => {
    const { dir, file } = project('bc-acp-opencode-');
    const model = await fake({ script: editing(file) });
    const hub = await acpHub({ opencode: agent(model) });

    const allowed = await startAgentTask(hub, 'opencode', dir, 'Change hello.txt to say new');
    const question = await pendingQuestion(hub, allowed);
    expect(question.approval).toMatchObject({ kind: 'edit' });
    expect(question.choices).toEqual(['Allow once', 'Always allow', 'Reject']);
    await answer(hub, allowed, 'Allow once');
    const done = await waited(hub, allowed);
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(fs.readFileSync(file, 'utf8')).toBe('new\n');
    expect(done.data).toMatchObject({ text: 'Done editing.', stop_reason: 'end_turn' });
    expect(done.data.approvals).toEqual([expect.objectContaining({ kind: 'edit', option_id: 'once', decision: 'allowed', by: 'answer' })]);
    expect(done.meta.token_usage.input).toBeGreaterThan(0);
    expect(done.meta.cost_usd).toBeGreaterThan(0);

    fs.writeFileSync(file, 'old\n');
    const rejected = await startAgentTask(hub, 'opencode', dir, 'Change hello.txt to say new');
    await pendingQuestion(hub, rejected);
    await answer(hub, rejected, 'Reject');
    const after = await waited(hub, rejected);
    await treeGone(dir); // nothing of either task is left running
    expect(fs.readFileSync(file, 'utf8')).toBe('old\n');
    expect(after.data.approvals).toEqual([expect.objectContaining({ option_id: 'reject', decision: 'rejected', by: 'answer' })]);
  });

  test('cancel in the middle of a turn ends the task and the agent’s whole process tree', async () => {
    const { dir } = project('bc-acp-opencode-cancel-');
    const model = await fake({ hang: true });
    const hub = await acpHub({ opencode: agent(model) });
    const id = await startAgentTask(hub, 'opencode', dir, 'Think about hello.txt');
    await waitFor(() => model.requests.some(offersTools), 'the agent’s model request', 90_000, 100);
    expect((await cli(['cancel', id], hub.env)).code).toBe(0);
    expect((await waited(hub, id)).status).toBe('cancelled');
    await treeGone(dir);
  });

  test('a follow-up continues the same session', async () => {
    const { dir } = project('bc-acp-opencode-follow-');
    const model = await fake({
      script: (request) => {
        if (!offersTools(request)) return { text: 'Colours' };
        const said = JSON.stringify(request.body.messages ?? []);
        return { text: said.includes('what was the colour') ? `You said: ${said.includes('teal') ? 'teal' : 'nothing'}` : 'Noted.' };
      },
    });
    const hub = await acpHub({ opencode: agent(model) });
    const first = await startAgentTask(hub, 'opencode', dir, 'my favourite colour is teal');
    const earlier = await waited(hub, first);
    expect(earlier.status, JSON.stringify(earlier)).toBe('success');
    const next = await startAgentTask(hub, 'opencode', dir, 'what was the colour?', ['--follow-up', first]);
    const later = await waited(hub, next);
    await treeGone(dir);
    expect(later.status, JSON.stringify(later)).toBe('success');
    expect(later.data.text).toBe('You said: teal');
    expect(later.data.session_id).toBe(earlier.data.session_id);
    expect(later.meta.acp.continued_by).toMatch(/^(resume|load)$/);
  });
});
