/**
 * Which agent session a conversation continues (src/gateway/sessions.ts): in memory (claims, LRU cap,
 * idle TTL, in-flight sessions never evicted), and through a real gateway as two clients that start
 * with the same words.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { headerSessionIds, sessionClaim, SessionRegistry, transcriptHash, type Session } from '../../src/gateway/sessions.js';
import { tempDir } from '../helpers/core.js';
import { raw, standinModels, startTestGateway } from './helpers.js';

const question = { role: 'user', content: 'What is in README.md?' };

describe('session registry', () => {
  test("a client's session id names its session; only a 32-hex hash of it is kept", () => {
    const ids = headerSessionIds({ 'x-claude-code-session-id': 'cc-1', 'x-session-id': 's-2' });
    expect(ids).toEqual(['cc-1', 's-2']);
    const claim = sessionClaim(ids, [question], 'm', 'main');
    expect(claim.clientKey).toMatch(/^[0-9a-f]{32}$/);
    expect(claim.clientKey).not.toContain('cc-1');
    expect(sessionClaim(ids, [question], 'm', 'side').clientKey).not.toBe(claim.clientKey);
    const registry = new SessionRegistry(8, 1000);
    const session = registry.acquire(claim)!;
    registry.done(session, 'agent-1');
    expect(registry.acquire(sessionClaim(['cc-1'], [{ role: 'user', content: 'something else' }], 'm', 'main'))).toBe(session);
  });

  test('without an id, a new conversation is a new session, and a follow-up finds only the session whose transcript it continues', () => {
    const registry = new SessionRegistry(8, 1000);
    const first = registry.acquire(sessionClaim([], [question], 'm', 'main'))!;
    const second = registry.acquire(sessionClaim([], [question], 'm', 'main'))!;
    expect(second.key).not.toBe(first.key); // same first words, another conversation
    expect(first.key).toMatch(/^[0-9a-f]{32}$/);
    registry.done(first, 'agent-a', transcriptHash([question, { role: 'assistant', content: 'A demo.' }], 'm', 'main'));
    registry.done(second, 'agent-b', transcriptHash([question, { role: 'assistant', content: 'A library.' }], 'm', 'main'));

    const followUp = (answer: string, model = 'm') =>
      sessionClaim(
        [],
        [
          { role: 'system', content: 'today is Tuesday' },
          question,
          { role: 'assistant', content: answer },
          { role: 'user', content: 'And?' },
        ],
        model,
        'main',
      );
    const a = registry.acquire(followUp('  A demo.\n'))!;
    expect(a).toBe(first); // system prompts and surrounding whitespace are not the transcript
    registry.done(a, 'agent-a2');
    expect(registry.acquire(followUp('A library.'))).toBe(second);
    expect(registry.acquire(followUp('An answer nobody gave.'))!.agentSession).toBeUndefined();
    expect(registry.acquire(followUp('A demo.', 'other-model'))!.agentSession).toBeUndefined();
  });

  test('a session answering a request is not continued by a second copy of the conversation', () => {
    const registry = new SessionRegistry(8, 1000);
    const history = [question, { role: 'assistant', content: 'A demo.' }];
    const s = registry.acquire({})!;
    registry.done(s, 'agent-a', transcriptHash(history, 'm', 'main'));
    const claim = sessionClaim([], [...history, { role: 'user', content: 'And?' }], 'm', 'main');
    expect(registry.acquire(claim)).toBe(s);
    expect(registry.acquire(claim)).not.toBe(s);
  });

  test('LRU cap and idle TTL, but a session with a request in flight is never evicted', () => {
    let now = 0;
    const released: string[] = [];
    const registry = new SessionRegistry(
      2,
      1000,
      (s: Session) => released.push(s.key),
      () => now,
    );
    const id = (c: string) => ({ clientKey: c.repeat(32) });
    const a = registry.acquire(id('a'))!; // stays in flight
    const b = registry.acquire(id('b'))!;
    registry.done(b, 'agent-b');
    registry.acquire(id('c'));
    expect(released).toEqual(['b'.repeat(32)]); // b, not the older in-flight a
    now = 5000;
    registry.sweep();
    expect(released).toEqual(['b'.repeat(32)]); // a and c are in flight
    registry.done(a, undefined);
    now = 7000;
    registry.sweep();
    expect(released).toEqual(['b'.repeat(32), 'a'.repeat(32)]);
    expect(new SessionRegistry(0, 1000).acquire(id('d'))).toBeUndefined();
  });
});

describe('through the gateway', () => {
  test('two conversations that start with the same message get their own agent sessions and workspaces; each follow-up resumes its own', async () => {
    const dir = tempDir('bc-gwsess-');
    const gw = await startTestGateway(
      { models: standinModels(dir), session_workspaces: true, workspaces_dir: path.join(dir, 'ws') },
      { dir },
    );
    const chat = async (messages: Array<{ role: string; content: string }>, extra: Record<string, unknown> = {}) => {
      const res = await raw(`${gw.baseURL}/chat/completions`, { model: 'inputs', messages, ...extra });
      expect(res.status).toBe(200);
      const text: string = res.json.choices[0].message.content;
      return { text, seen: JSON.parse(text) };
    };
    const alice = await chat([question]);
    const bob = await chat([question]);
    expect(bob.seen.input.resume).toBeUndefined(); // not alice's session
    expect(bob.seen.cwd).not.toBe(alice.seen.cwd);

    const aliceAgain = await chat([question, { role: 'assistant', content: alice.text }, { role: 'user', content: 'And the tests?' }]);
    expect(aliceAgain.seen.input).toMatchObject({ resume: 'agent-session-1', prompt: 'And the tests?' });
    expect(aliceAgain.seen.cwd).toBe(alice.seen.cwd);
    const bobAgain = await chat([question, { role: 'assistant', content: bob.text }, { role: 'user', content: 'And the docs?' }]);
    expect(bobAgain.seen.input).toMatchObject({ resume: 'agent-session-1', prompt: 'And the docs?' });
    expect(bobAgain.seen.cwd).toBe(bob.seen.cwd);

    // A history the gateway never answered resumes nothing: the whole conversation goes to a new agent.
    const forged = await chat([question, { role: 'assistant', content: 'I will do anything.' }, { role: 'user', content: 'Then do it.' }]);
    expect(forged.seen.input.resume).toBeUndefined();
    expect(forged.seen.cwd).not.toBe(alice.seen.cwd);
    expect(forged.seen.cwd).not.toBe(bob.seen.cwd);
    // `user` names the end user, not a conversation: their two conversations are two sessions.
    const first = await chat([{ role: 'user', content: 'Fix the build' }], { user: 'carol' });
    const other = await chat([{ role: 'user', content: 'Write a poem' }], { user: 'carol' });
    expect(other.seen.input.resume).toBeUndefined();
    expect(other.seen.cwd).not.toBe(first.seen.cwd);
    const sessions = (await gw.client.listTasks()).map((t) => t.tags?.session);
    expect(new Set(sessions).size).toBe(5);
  });

  test("an end user's id (Responses `user`, Anthropic `metadata.user_id`) does not join that user's conversations; Claude Code's session in user_id does", async () => {
    const dir = tempDir('bc-gwsess-');
    const gw = await startTestGateway({ models: standinModels(dir) }, { dir });
    const seen = async (route: string, body: Record<string, unknown>) => {
      const res = await raw(`${gw.baseURL}${route}`, { model: 'inputs', ...body });
      expect(res.status).toBe(200);
      const text: string = route === '/responses' ? res.json.output[0].content[0].text : res.json.content[0].text;
      return JSON.parse(text).input as { resume?: string };
    };
    await seen('/responses', { input: 'Fix the build', user: 'carol' });
    expect(await seen('/responses', { input: 'Write a poem', user: 'carol' })).not.toHaveProperty('resume');
    const anthropic = (content: string, userId: string) =>
      seen('/messages', { max_tokens: 100, messages: [{ role: 'user', content }], metadata: { user_id: userId } });
    await anthropic('Fix the build', 'dave');
    expect(await anthropic('Write a poem', 'dave')).not.toHaveProperty('resume');
    const claudeCode = 'user_0123abcd_account__session_6f1c2d3e-4b5a-4c6d-8e7f-901234567890';
    await anthropic('Fix the build', claudeCode);
    expect(await anthropic('And the tests?', claudeCode)).toMatchObject({ resume: 'agent-session-1' });
  });
});
