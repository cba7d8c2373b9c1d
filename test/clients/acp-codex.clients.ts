/**
 * The real codex-acp (pinned; its Linux binary is an npm package) as an ACP task on a hub, against
 * the fake Responses server: a scripted model makes it edit a file with an escalated `exec_command`
 * (Codex asks before running a command outside its sandbox), the permission request is answered with
 * `backchannel answer`, cancel mid-turn ends the whole tree, and a follow-up continues
 * the same session. codex-acp needs `authenticate` with its API-key method before session/new.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { tempDir, waitFor } from '../helpers/core.js';
import { call, say, startFakeResponses, type FakeResponses, type ScriptedResponse } from '../helpers/fake-responses.js';
import { clientFor } from '../helpers/real-clients.js';
import { cli } from '../hub/control/hub-process.js';
import { acpHub, answer, pendingQuestion, project, startAgentTask, treeGone, waited, type AgentEntry } from './acp-real.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codexAcp);

const fakes: FakeResponses[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function fake(script: ScriptedResponse[]): Promise<FakeResponses> {
  const started = await startFakeResponses(script);
  fakes.push(started);
  return started;
}

/** codex-acp with a private CODEX_HOME whose provider is the fake model. */
function agent(model: FakeResponses): AgentEntry {
  const home = tempDir('bc-acp-codex-home-');
  fs.writeFileSync(
    path.join(home, 'config.toml'),
    [
      'model = "gpt-fake"',
      'model_provider = "fake"',
      '',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = "${model.baseUrl}"`,
      'wire_api = "responses"',
      'env_key = "OPENAI_API_KEY"',
      '',
    ].join('\n'),
  );
  return { command: codex.bin, env: { HOME: home, CODEX_HOME: home, OPENAI_API_KEY: 'k-fake', CODEX_API_KEY: 'k-fake' } };
}

/** The model's edit: a command Codex may run only with the user's approval (outside its sandbox). */
const edit = call('exec_command', {
  cmd: "sh -c 'echo new > hello.txt'",
  sandbox_permissions: 'require_escalated',
  justification: 'edit hello.txt',
});

describe.skipIf(codex.skip !== undefined)(codex.title, { timeout: 240_000 }, () => {
  test('allow runs the edit, reject leaves the file (codex-acp reports no token counts or cost)', async () => {
    const { dir, file } = project('bc-acp-codex-');
    const model = await fake([{ output: [edit] }, { output: [say('Done editing.')] }, { output: [edit] }]);
    const hub = await acpHub({ codex: agent(model) });

    const allowed = await startAgentTask(hub, 'codex', dir, 'Change hello.txt to say new');
    const question = await pendingQuestion(hub, allowed);
    expect(question.question).toMatch(/^needs approval: sh -c 'echo new > hello\.txt'/);
    expect(question.approval).toMatchObject({ kind: 'execute' });
    expect(question.choices[0]).toBe('Yes, proceed');
    await answer(hub, allowed, 'Yes, proceed');
    const done = await waited(hub, allowed);
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(fs.readFileSync(file, 'utf8')).toBe('new\n');
    expect(done.data.text).toMatch(/Done editing\.$/);
    expect(done.data.approvals).toEqual([
      expect.objectContaining({ kind: 'execute', option_id: 'approved', decision: 'allowed', by: 'answer' }),
    ]);
    // codex-acp 0.16.0 reports the context's size (usage_update `used`), no cost for an unknown model.
    expect(done.meta.acp).toMatchObject({ stop_reason: 'end_turn' });
    expect(model.requests.length).toBe(2);

    fs.writeFileSync(file, 'old\n');
    const rejected = await startAgentTask(hub, 'codex', dir, 'Change hello.txt to say new');
    const asked = await pendingQuestion(hub, rejected);
    await answer(hub, rejected, asked.choices.at(-1)!);
    const after = await waited(hub, rejected);
    await treeGone(dir); // nothing of either task is left running
    expect(fs.readFileSync(file, 'utf8')).toBe('old\n');
    // Codex's reject option ("No, and tell Codex what to do differently") ends its turn: the task fails
    // with what was done so far, the rejection among it.
    expect(after).toMatchObject({ status: 'error', message: 'failed: the agent cancelled its turn by itself' });
    expect(after.payload!.data.approvals).toEqual([expect.objectContaining({ option_id: 'abort', decision: 'rejected', by: 'answer' })]);
  });

  test('cancel in the middle of a turn ends the task and the agent’s whole process tree', async () => {
    const { dir } = project('bc-acp-codex-cancel-');
    const never = new Promise<void>(() => {});
    const model = await fake([{ output: [say('too late')], hold: never }]);
    const hub = await acpHub({ codex: agent(model) });
    const id = await startAgentTask(hub, 'codex', dir, 'Think about hello.txt');
    await waitFor(() => model.requests.length > 0, 'the agent’s model request', 90_000, 100);
    expect((await cli(['cancel', id], hub.env)).code).toBe(0);
    expect((await waited(hub, id)).status).toBe('cancelled');
    await treeGone(dir);
  });

  test('a follow-up continues the same session', async () => {
    const { dir } = project('bc-acp-codex-follow-');
    const model = await fake([{ output: [say('Noted.')] }, { output: [say('You said teal.')] }]);
    const hub = await acpHub({ codex: agent(model) });
    const first = await startAgentTask(hub, 'codex', dir, 'my favourite colour is teal');
    const earlier = await waited(hub, first);
    expect(earlier.status, JSON.stringify(earlier)).toBe('success');
    const next = await startAgentTask(hub, 'codex', dir, 'what was the colour?', ['--follow-up', first]);
    const later = await waited(hub, next);
    await treeGone(dir);
    expect(later.status, JSON.stringify(later)).toBe('success');
    expect(later.data.session_id).toBe(earlier.data.session_id);
    expect(later.meta.acp.continued_by).toMatch(/^(resume|load)$/);
    // The model sees the first turn in the second's conversation: the same session went on.
    const input = JSON.stringify(model.requests[1]!.body.input);
    expect(input).toContain('my favourite colour is teal');
    expect(input).toContain('what was the colour?');
  });
});
