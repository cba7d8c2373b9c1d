/**
 * Coding tasks over MCP (the official SDK client over stdio, a real hub): start_task with a worktree,
 * get_task_diff (one task, two together with their overlap), apply_task_change (a conflict is an
 * isError result naming the files, the tree unchanged), discard_task_change (nothing left).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture, ROOT } from '../helpers/core.js';
import { checkoutHash, lines, linkedWorktrees, makeRepo, ourBranches } from '../helpers/git-repo.js';
import { BIN, hubEnv, startHub } from '../hub/control/hub-process.js';

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; value: any }> {
  const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
  const text = (result.content[0] as { text: string }).text;
  try {
    return { isError: result.isError === true, value: JSON.parse(text) };
  } catch {
    return { isError: result.isError === true, value: text };
  }
}

/** `backchannel mcp` on a hub of its own, through the official SDK client over stdio. */
async function mcpOnHub(): Promise<Client> {
  const hub = hubEnv();
  await startHub(hub);
  const env = Object.fromEntries(Object.entries(hub.env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  const client = new Client({ name: 'backchannel-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT, stderr: 'pipe' }));
  clients.push(client);
  return client;
}

describe('coding tasks over MCP', () => {
  test('start two in worktrees, review them together, a conflict refused whole, apply one, discard both', async () => {
    const client = await mcpOnHub();
    const A = lines(8, 'a');
    const repo = makeRepo({ 'a.txt': A });
    const before = checkoutHash(repo);
    const start = async (content: string) =>
      (
        await call(client, 'start_task', {
          command: fixture('coder.mjs'),
          cwd: repo,
          worktree: true,
          input: { edits: [{ path: 'a.txt', content }] },
        })
      ).value.task_id as string;
    const one = await start(A.replace('a 4\n', 'one\n'));
    const two = await start(A.replace('a 4\n', 'two\n'));
    for (const id of [one, two]) expect((await call(client, 'wait_for_task', { task_id: id })).isError).toBe(false);

    const single = await call(client, 'get_task_diff', { task_ids: [one] });
    expect(single.value.changes[0]).toMatchObject({ task_id: one, state: 'ready', change: { insertions: 1, deletions: 1 } });
    expect(single.value.changes[0].diff).toContain('+one');
    const together = await call(client, 'get_task_diff', { task_ids: [one, two] });
    expect(together.value.overlaps).toEqual([
      { path: 'a.txt', a: { taskId: one, hunk: 0 }, b: { taskId: two, hunk: 0 }, lines: { from: 4, to: 4 }, kind: 'lines' },
    ]);

    const refused = await call(client, 'apply_task_change', { task_ids: [one, two] });
    expect(refused.isError).toBe(true);
    expect(refused.value).toMatchObject({ ok: false, conflict: { taskId: two, files: ['a.txt'] } });
    expect(checkoutHash(repo)).toBe(before);
    const applied = await call(client, 'apply_task_change', { task_ids: [one] });
    expect(applied.value).toEqual({ ok: true, applied: [one], files: ['a.txt'] });
    expect(readFileSync(path.join(repo, 'a.txt'), 'utf8')).toContain('one\n');

    for (const id of [one, two])
      expect((await call(client, 'discard_task_change', { task_id: id })).value).toMatchObject({ state: 'discarded' });
    expect(ourBranches(repo)).toEqual([]);
    expect(linkedWorktrees(repo)).toEqual([]);
    const bad = await call(client, 'start_task', { command: fixture('coder.mjs'), cwd: repo, base: 'main' });
    expect(bad.isError).toBe(true);
  });

  test('a coding task’s question names its branch and the files it changed so far, and answer_question answers it', async () => {
    const client = await mcpOnHub();
    const repo = makeRepo({ 'a.txt': lines(4, 'a') });
    const { task_id } = (
      await call(client, 'start_task', {
        command: fixture('coder.mjs'),
        cwd: repo,
        worktree: true,
        input: { edits: [{ path: 'a.txt', append: 'more\n' }], ask: 'Also the tests?' },
      })
    ).value as { task_id: string };
    const asked = await call(client, 'wait_for_task', { task_id });
    expect(asked.value).toMatchObject({
      done: false,
      question: { question: 'Also the tests?', worktree: { branch: expect.stringMatching(/^backchannel\//), files: ['a.txt'] } },
    });
    expect((await call(client, 'answer_question', { task_id, answer: 'no' })).value).toEqual({ task_id, answered: true });
    expect((await call(client, 'wait_for_task', { task_id })).value).toMatchObject({ done: true, state: 'succeeded' });
    await call(client, 'discard_task_change', { task_id });
  });
});
