/**
 * The real Claude Code (pinned) as a coding agent, as a user runs it (docs/coding-agents.md):
 * `backchannel run --worktree … -- node templates/claude-code/agent.mjs`, in-process and on a hub,
 * against a fake model that makes it call its own tools (Write, Edit, Bash). The file lands in the
 * task's worktree (the checkout stays byte-identical), the task carries the change, `diff`/`apply`/
 * `discard` work on it; `run --follow-up` resumes Claude Code's own session (`--resume`) in the same
 * worktree (the model's first request of the follow-up carries the first run's transcript); a commit
 * it makes with git is on the task's branch once the owner allows git.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';
import {
  blocksOf,
  startFakeAnthropic,
  systemText,
  type FakeAnthropic,
  type FakeContentBlock,
  type FakeMessagesBody,
  type FakeTurn,
} from '../helpers/fake-anthropic.js';
import { checkoutHash, gitIn, linkedWorktrees, makeRepo, ourBranches } from '../helpers/git-repo.js';
import { clientFor, runCli as runClient } from '../helpers/real-clients.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';
import type { ChangeSummary, WorktreeRecord } from '../../src/model/change.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);
const BIN = path.join(ROOT, 'bin/backchannel.js');
const AGENT = path.join(ROOT, 'templates/claude-code/agent.mjs');
/** Two real Claude Code runs and a dozen CLI calls each: ~15 s idle, over a minute on a busy 2-core machine. */
const TEST_TIMEOUT_MS = 400_000;

/** `backchannel <args>` in `cwd`, with `env` over this process's environment. */
function runCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runClient(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env } });
}

/**
 * Where the conversation stands: its latest prompt (the last text of the last user message that is
 * not a tool's result; Claude Code puts reminders before it and may put a `system` message with its
 * environment after it) and how many tool results came back since.
 */
function turnOf(body: FakeMessagesBody): { prompt: string | undefined; results: number } {
  let results = 0;
  for (const message of [...(body.messages ?? [])].reverse()) {
    if (message.role !== 'user') continue;
    const blocks = blocksOf(message);
    const toolResults = blocks.filter((block) => block.type === 'tool_result').length;
    results += toolResults;
    if (toolResults > 0) continue;
    const prompt = blocks.filter((block) => block.type === 'text' && !block.text?.startsWith('<system-reminder>')).at(-1)?.text;
    if (prompt !== undefined) return { prompt, results };
  }
  return { prompt: undefined, results };
}

const lastPrompt = (body: FakeMessagesBody) => turnOf(body).prompt;

/** Where Claude Code says it runs ("Primary working directory: …", in its system prompt or messages). */
function workingDirectoryOf(body: FakeMessagesBody): string | undefined {
  const texts = [systemText(body), ...(body.messages ?? []).flatMap((message) => blocksOf(message).map((block) => block.text ?? ''))];
  for (const text of texts) {
    const match = /Primary working directory: (.+)/.exec(text);
    if (match) return match[1]!.trim();
  }
  return undefined;
}

/** A tool call of the fake model: one of Claude Code's tools and its input, for its working directory. */
type Step = (cwd: string) => { name: string; input: Record<string, unknown> };
const write =
  (file: string, content: string): Step =>
  (cwd) => ({ name: 'Write', input: { file_path: path.join(cwd, file), content } });
const edit =
  (file: string, from: string, to: string): Step =>
  (cwd) => ({ name: 'Edit', input: { file_path: path.join(cwd, file), old_string: from, new_string: to } });
const bash =
  (command: string): Step =>
  () => ({ name: 'Bash', input: { command, description: 'Commit the change' } });

/**
 * The model's side: a prompt the test registered gets its tool calls one by one (each after the
 * result of the one before), then the final answer; a request without Claude Code's tools (a side
 * request) gets text. Anything else is a test bug, answered with a 400 the run then reports.
 */
function scriptFor(jobs: Map<string, Step[]>): (request: { body: FakeMessagesBody }) => FakeTurn {
  return ({ body }) => {
    if (!body.tools?.some((tool) => tool.name === 'Write')) return { text: 'ok' };
    const { prompt, results } = turnOf(body);
    const steps = prompt === undefined ? undefined : jobs.get(prompt);
    if (!steps) throw new Error(`no job for the prompt ${JSON.stringify(prompt)}`);
    if (results >= steps.length) return { text: 'Done.' };
    const cwd = workingDirectoryOf(body);
    if (!cwd) throw new Error('the request does not say where Claude Code runs');
    const call = steps[results]!(cwd);
    return { text: `${call.name} ${String(call.input.file_path ?? call.input.command)}.`, tool: call };
  };
}

/** The tool_result Claude Code sent back for the tool call `id`. */
function toolResult(model: FakeAnthropic, id: string): FakeContentBlock | undefined {
  for (const request of model.requests) {
    const found = (request.body.messages ?? []).flatMap(blocksOf).find((block) => block.type === 'tool_result' && block.tool_use_id === id);
    if (found) return found;
  }
  return undefined;
}

interface ShownTask {
  task: { id: string; cwd: string; change?: ChangeSummary; parent?: string };
}

describe.skipIf(claude.skip !== undefined)(`${claude.title} edits files in its worktree`, () => {
  describe.each(RUN_MODES)('%s', (mode) => {
    const where = runMode(mode);
    const state = path.join(tempDir('bc-cc-state-'), 'state');
    // Claude Code keeps its sessions under $HOME/.claude: one private HOME for the whole block.
    const home = tempDir('bc-cc-home-');
    const jobs = new Map<string, Step[]>();
    let model: FakeAnthropic;
    beforeAll(async () => {
      model = await startFakeAnthropic({ script: scriptFor(jobs) });
    });
    afterAll(async () => {
      await model.close();
    });

    const env = () => ({
      XDG_STATE_HOME: state,
      CURSOR_IPC_DIR: path.join(state, 'ipc'),
      ...where.env(),
      HOME: home,
      CLAUDE_BIN: claude.bin,
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'dummy',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    });
    const cli = (args: string[], cwd: string = ROOT, more: Record<string, string> = {}) => runCli(args, { ...env(), ...more }, cwd);
    const input = (prompt: string) => JSON.stringify({ prompt, allow_writes: true });
    const show = async (id: string) => JSON.parse((await cli(['show', '--json', id])).stdout) as ShownTask;
    /** The worktree of `repo`, as `backchannel worktrees` lists it (each test has its own repository). */
    const recordOf = async (repo: string) => {
      const records = JSON.parse((await cli(['worktrees', '--json'])).stdout) as WorktreeRecord[];
      const record = records.find((r) => r.repo === repo);
      if (!record) throw new Error(`no worktree of ${repo} in ${JSON.stringify(records)}`);
      return record;
    };

    test(
      'writes a file with its Write tool in the task’s worktree; diff shows it, apply brings it in, discard leaves nothing',
      async () => {
        const repo = makeRepo();
        const before = checkoutHash(repo);
        const prompt = `Add hello.txt (${mode})`;
        jobs.set(prompt, [write('hello.txt', 'hello from Claude Code\n')]);

        const run = await cli(['run', '--worktree', '--verbose', '--input', input(prompt), '--', 'node', AGENT], repo);
        expect(run.code, run.stderr + run.stdout).toBe(0);
        const payload = JSON.parse(run.stdout) as { data: { text: string }; meta: { session_id: string } };
        expect(payload.data.text).toContain('Done.');
        // The template reported the tool call as the row's step, in words.
        expect(run.stderr).toMatch(/^\[backchannel\] partial writing hello\.txt$/m);
        // What the task changed, from its snapshot.
        expect(run.stderr).toMatch(/^change: 1 file, \+1 −0 on branch backchannel\/[0-9a-f]{12} — review with `backchannel diff /m);

        // Written in the worktree, not in the checkout.
        expect(checkoutHash(repo)).toBe(before);
        expect(existsSync(path.join(repo, 'hello.txt'))).toBe(false);
        const record = await recordOf(repo);
        const worktree = record.cwd;
        expect(worktree).not.toBe(repo);
        expect(readFileSync(path.join(worktree, 'hello.txt'), 'utf8')).toBe('hello from Claude Code\n');
        // Claude Code ran there (it told the model so), and its Write went through (acceptEdits).
        const first = model.requests.find((r) => lastPrompt(r.body) === prompt);
        expect(workingDirectoryOf(first!.body)).toBe(worktree);
        expect(toolResult(model, model.toolUses.at(-1)!)).toMatchObject({ content: expect.stringMatching(/^File created successfully/) });
        expect(toolResult(model, model.toolUses.at(-1)!)?.is_error).not.toBe(true);

        // The task carries the change summary (so does the registry).
        const summary = {
          repo,
          branch: record.branch,
          files: [{ path: 'hello.txt', status: 'added', insertions: 1, deletions: 0 }],
          insertions: 1,
          deletions: 0,
          commits: [],
        };
        expect(record.change).toMatchObject(summary);
        if (where.socket) expect((await show(record.taskId)).task.change).toMatchObject(summary);
        expect(record.branch).toMatch(/^backchannel\/[0-9a-f]{12}$/);

        const diff = await cli(['diff', record.taskId]);
        expect(diff.code, diff.stderr).toBe(0);
        expect(diff.stdout).toContain('+hello from Claude Code');

        const applied = await cli(['apply', record.taskId]);
        expect(applied.code, applied.stderr).toBe(0);
        expect(applied.stdout).toBe('Applied 1 change (1 file): hello.txt\n');
        expect(readFileSync(path.join(repo, 'hello.txt'), 'utf8')).toBe('hello from Claude Code\n');

        const discarded = await cli(['discard', record.taskId]);
        expect(discarded.code, discarded.stderr).toBe(0);
        expect(ourBranches(repo)).toEqual([]);
        expect(linkedWorktrees(repo)).toEqual([]);
        expect(existsSync(worktree)).toBe(false);
        expect((await cli(['worktrees'])).stdout).toBe('No worktrees.\n');
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'a follow-up resumes Claude Code’s session (the model sees the first run’s transcript) and edits the same worktree',
      async () => {
        const repo = makeRepo();
        const before = checkoutHash(repo);
        const firstPrompt = `Add one.txt (${mode})`;
        const nextPrompt = `Now edit one.txt and add two.txt (${mode})`;
        jobs.set(firstPrompt, [write('one.txt', 'one\n')]);
        jobs.set(nextPrompt, [edit('one.txt', 'one', 'one, edited'), write('two.txt', 'two\n')]);

        const first = await cli(['run', '--worktree', '--json', '--input', input(firstPrompt), '--', 'node', AGENT], repo);
        expect(first.code, first.stderr + first.stdout).toBe(0);
        const firstSession = (JSON.parse(first.stdout) as { meta: { session_id: string } }).meta.session_id;
        const record = await recordOf(repo);
        const firstTool = model.toolUses.at(-1)!;

        const seen = model.requests.length;
        const next = await cli(
          ['run', '--follow-up', record.taskId.slice(0, 8), '--verbose', '--input', input(nextPrompt), '--', 'node', AGENT],
          repo,
        );
        expect(next.code, next.stderr + next.stdout).toBe(0);
        expect(next.stderr).toMatch(/^\[backchannel\] partial editing one\.txt$/m);
        expect(next.stderr).toMatch(/^\[backchannel\] partial writing two\.txt$/m);
        // The follow-up's change is the thread's: both files against the base.
        expect(next.stderr).toMatch(new RegExp(`^change: 2 files, \\+2 −0 on branch ${record.branch} `, 'm'));
        const nextPayload = JSON.parse(next.stdout) as { meta: { session_id: string } };
        // Claude Code resumed its own session: same session id, and the model got the whole conversation.
        expect(nextPayload.meta.session_id).toBe(firstSession);
        const resumed = model.requests.slice(seen).find((r) => lastPrompt(r.body) === nextPrompt);
        expect(resumed, 'the follow-up’s prompt reached the model').toBeDefined();
        const history = (resumed!.body.messages ?? []).flatMap(blocksOf);
        expect(history.some((block) => block.type === 'text' && block.text === firstPrompt)).toBe(true);
        expect(history).toContainEqual(
          expect.objectContaining({
            type: 'tool_use',
            id: firstTool,
            name: 'Write',
            input: { file_path: path.join(record.cwd, 'one.txt'), content: 'one\n' },
          }),
        );
        expect(history).toContainEqual(expect.objectContaining({ type: 'tool_result', tool_use_id: firstTool }));
        expect(resumed!.headers['x-claude-code-session-id']).toBe(firstSession);

        // The same worktree (Claude Code's Edit of the file its first run wrote went through), both files
        // in the thread's one change; the checkout untouched.
        expect(workingDirectoryOf(resumed!.body)).toBe(record.cwd);
        expect(readFileSync(path.join(record.cwd, 'one.txt'), 'utf8')).toBe('one, edited\n');
        expect(readFileSync(path.join(record.cwd, 'two.txt'), 'utf8')).toBe('two\n');
        expect(checkoutHash(repo)).toBe(before);
        const after = await recordOf(repo);
        expect(after.change?.files.map((f) => f.path).sort()).toEqual(['one.txt', 'two.txt']);
        expect(after!.followUps).toHaveLength(1);
        if (where.socket) {
          const { task } = await show(after!.followUps![0]!);
          expect(task.parent).toBe(record.taskId);
          expect(task.change?.files.map((f) => f.path).sort()).toEqual(['one.txt', 'two.txt']);
        }
        const diff = await cli(['diff', record.taskId]);
        expect(diff.stdout).toContain('+one, edited');
        expect(diff.stdout).toContain('+two');

        const discarded = await cli(['discard', record.taskId]);
        expect(discarded.code, discarded.stderr).toBe(0);
        expect(ourBranches(repo)).toEqual([]);
        expect(linkedWorktrees(repo)).toEqual([]);
        expect(existsSync(record.cwd)).toBe(false);
      },
      TEST_TIMEOUT_MS,
    );

    test(
      'a commit it makes with git through its Bash tool is on the task’s branch, once the owner allows git (refused otherwise)',
      async () => {
        const repo = makeRepo();
        const before = checkoutHash(repo);
        const identity = {
          GIT_AUTHOR_NAME: 'Agent',
          GIT_AUTHOR_EMAIL: 'agent@test',
          GIT_COMMITTER_NAME: 'Agent',
          GIT_COMMITTER_EMAIL: 'agent@test',
        };
        const steps = [write('b.txt', 'b\n'), bash('git add -A && git commit -q -m "Add b.txt"')];
        const refusedPrompt = `Add b.txt and commit it (${mode}, git not allowed)`;
        const allowedPrompt = `Add b.txt and commit it (${mode})`;
        jobs.set(refusedPrompt, steps);
        jobs.set(allowedPrompt, steps);

        // allow_writes is acceptEdits: file edits go through, a shell command that changes things does not.
        const refused = await cli(['run', '--worktree', '--json', '--input', input(refusedPrompt), '--', 'node', AGENT], repo, identity);
        expect(refused.code, refused.stderr + refused.stdout).toBe(0);
        expect((JSON.parse(refused.stdout) as { meta: { permission_denials?: string[] } }).meta.permission_denials).toEqual(['Bash']);
        const denied = await recordOf(repo);
        expect(denied.change).toMatchObject({ commits: [], files: [{ path: 'b.txt', status: 'added' }] });
        expect((await cli(['discard', denied.taskId])).code).toBe(0);

        // The owner allows git add/commit (CLAUDE_EXTRA_ARGS, never the task's input).
        const allowGit = JSON.stringify(['--allowedTools', 'Bash(git add:*)', 'Bash(git commit:*)']);
        const allowed = await cli(['run', '--worktree', '--json', '--input', input(allowedPrompt), '--', 'node', AGENT], repo, {
          ...identity,
          CLAUDE_EXTRA_ARGS: allowGit,
        });
        expect(allowed.code, allowed.stderr + allowed.stdout).toBe(0);
        expect((JSON.parse(allowed.stdout) as { meta: { permission_denials?: string[] } }).meta.permission_denials).toBeUndefined();
        const record = await recordOf(repo);
        expect(record.change).toMatchObject({
          commits: [{ subject: 'Add b.txt' }],
          files: [{ path: 'b.txt', status: 'added', insertions: 1, deletions: 0 }],
        });
        expect(gitIn(repo, 'log', '--format=%s', record.branch).split('\n')[0]).toBe('Add b.txt');
        expect(gitIn(record.cwd, 'status', '--porcelain')).toBe('');
        expect(checkoutHash(repo)).toBe(before);
        const diff = await cli(['diff', record.taskId]);
        expect(diff.stdout).toContain('+b');

        expect((await cli(['discard', record.taskId])).code).toBe(0);
        expect(ourBranches(repo)).toEqual([]);
        expect(linkedWorktrees(repo)).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );
  });
});
