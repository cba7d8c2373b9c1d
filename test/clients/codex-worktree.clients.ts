/**
 * The real Codex CLI (pinned) driven by a local fake Responses API model (test/helpers/fake-responses.ts)
 * into editing files: straight (`codex exec --json`: its stream is the one in the recordings under
 * test/fixtures/recordings/, which test/templates/codex-translate.test.ts maps), and under the codex
 * template as a coding task (`backchannel run --worktree`, then `--follow-up`, which resumes the thread).
 *
 * The recordings are remade by this file: BACKCHANNEL_RECORD=1 npx vitest run --config
 * test/clients/vitest.config.ts test/clients/codex-worktree.clients.ts
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, fixture, tempDir, waitFor } from '../helpers/core.js';
import { call, say, startFakeResponses, type FakeResponses, type ResponsesRequest } from '../helpers/fake-responses.js';
import { checkoutHash, gitIn, makeRepo } from '../helpers/git-repo.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { RUN_MODES, runMode } from '../helpers/run-modes.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codex);
const BACKCHANNEL = path.join(ROOT, 'bin/backchannel.js');
const AGENT = path.join(ROOT, 'templates/codex/agent.mjs');
const RECORD = process.env.BACKCHANNEL_RECORD === '1';
const KEY_VARIABLE = 'CODEX_FAKE_KEY';

/** A CODEX_HOME whose config.toml points Codex at the fake (the custom-provider set-up of docs/gateway.md). */
function codexHome(dir: string, fake: FakeResponses): string {
  const home = path.join(dir, 'codex-home');
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(
    path.join(home, 'config.toml'),
    [
      'model = "fake-model"',
      'model_provider = "fake"',
      '',
      '[model_providers.fake]',
      'name = "Fake Responses API"',
      `base_url = "${fake.baseUrl}"`,
      'wire_api = "responses"',
      `env_key = "${KEY_VARIABLE}"`,
      '',
    ].join('\n'),
  );
  return home;
}

/** Codex's own environment: a private HOME and CODEX_HOME, the fake's key; nothing of the user's. */
function codexEnv(dir: string, home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: dir, CODEX_HOME: home, [KEY_VARIABLE]: 'k-fake' };
}

/** Codex's `apply_patch` through its shell tool (the tools it offers the fake have no apply_patch of their own). */
const applyPatch = (patch: string) => call('exec_command', { cmd: `apply_patch <<'EOF'\n${patch}EOF\n` });

/** The JSON lines of a stdout. */
const eventsOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { type: string; item?: { type: string } });

/** Every kind of line a stream has: `thread.started`, `item.completed file_change`, … */
const kindsOf = (stdout: string) => [...new Set(eventsOf(stdout).map((e) => (e.item ? `${e.type} ${e.item.type}` : e.type)))].sort();

/** The user's text inputs of a request (the prompts of the thread so far). */
const userTexts = (request: ResponsesRequest) =>
  request.body.input
    .filter((item) => item.role === 'user' && Array.isArray(item.content))
    .flatMap((item) => (item.content as Array<{ text?: string }>).map((part) => part.text ?? ''));

/** A recording as kept: the run's directories and the fake's port replaced by neutral ones. */
function scrub(stdout: string, dir: string, fake: FakeResponses): string {
  return stdout
    .split(fs.realpathSync(dir))
    .join('/tmp/scratch')
    .split(dir)
    .join('/tmp/scratch')
    .split(fake.baseUrl)
    .join('http://127.0.0.1:PORT/v1');
}

/** Compares a run's stream with its recording (every kind of line, both ways), or remakes the recording. */
function matchesRecording(name: string, stdout: string, dir: string, fake: FakeResponses): void {
  const file = fixture(`recordings/${name}`);
  if (RECORD) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, scrub(stdout, dir, fake));
  }
  expect(kindsOf(stdout)).toEqual(kindsOf(fs.readFileSync(file, 'utf8')));
}

function backchannel(
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BACKCHANNEL, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(codex.skip !== undefined)(`${codex.title} against a fake Responses API`, () => {
  test('codex exec --json runs a command, fails one, applies a patch, answers, and resumes: the recorded stream', async () => {
    const dir = tempDir('bc-cxr-');
    const project = makeRepo({ 'README.md': '# demo\n' });
    const fake = await startFakeResponses([
      { output: [call('exec_command', { cmd: 'cat README.md' })], usage: { input_tokens: 120, cached_tokens: 20, output_tokens: 8 } },
      { output: [call('exec_command', { cmd: 'ls no-such-file' })] },
      {
        output: [
          applyPatch(
            '*** Begin Patch\n*** Update File: README.md\n@@\n-# demo\n+# demo, edited\n*** Add File: notes.txt\n+hello\n*** End Patch\n',
          ),
        ],
      },
      { output: [say('I edited README.md and added notes.txt.')] },
      { output: [say('Resumed: the edit is in place.')] },
    ]);
    try {
      const home = codexHome(dir, fake);
      const env = codexEnv(dir, home);
      const first = await runCli(codex.bin, ['exec', '--json', '--sandbox', 'workspace-write', '--', 'Edit the README'], {
        cwd: project,
        env,
      });
      expect(first.code, first.stderr).toBe(0);
      expect(fs.readFileSync(path.join(project, 'README.md'), 'utf8')).toBe('# demo, edited\n');
      expect(fs.readFileSync(path.join(project, 'notes.txt'), 'utf8')).toBe('hello\n');
      const tools = fake.requests[0]!.body.tools!.map((tool) => tool.name ?? tool.type);
      // What 0.171.0 offers a model it has no metadata for: a shell (`exec_command`), no apply_patch tool of
      // its own — an `apply_patch` heredoc run through the shell is applied by Codex itself (a file_change item).
      expect(tools).toEqual([
        'exec_command',
        'write_stdin',
        'request_user_input',
        'view_image',
        'multi_agent_v1',
        'get_goal',
        'create_goal',
        'update_goal',
        'web_search',
      ]);
      matchesRecording('codex-exec-json.jsonl', first.stdout.replaceAll(project, '/home/user/project'), dir, fake);

      const thread = (eventsOf(first.stdout)[0] as unknown as { thread_id: string }).thread_id;
      const again = await runCli(codex.bin, ['exec', '--json', '--sandbox', 'workspace-write', 'resume', thread, '--', 'Is it done?'], {
        cwd: project,
        env,
      });
      expect(again.code, again.stderr).toBe(0);
      expect(eventsOf(again.stdout)[0]).toEqual({ type: 'thread.started', thread_id: thread });
      expect(userTexts(fake.requests[4]!)).toEqual(expect.arrayContaining(['Edit the README', 'Is it done?']));
      matchesRecording('codex-exec-json-resume.jsonl', again.stdout.replaceAll(project, '/home/user/project'), dir, fake);
    } finally {
      await fake.close();
    }
  });

  test('a 401 from the model: five reconnects, then turn.failed', async () => {
    const dir = tempDir('bc-cxa-');
    const fake = await startFakeResponses(Array.from({ length: 10 }, () => ({ status: 401, message: 'Incorrect API key provided' })));
    try {
      const env = codexEnv(dir, codexHome(dir, fake));
      const run = await runCli(codex.bin, ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only', '--', 'Say hi'], {
        cwd: dir,
        env,
      });
      expect(run.code).toBe(1);
      expect(eventsOf(run.stdout).at(-1)).toMatchObject({
        type: 'turn.failed',
        error: { message: expect.stringContaining('401 Unauthorized') },
      });
      matchesRecording('codex-exec-json-401.jsonl', run.stdout, dir, fake);
    } finally {
      await fake.close();
    }
  });

  test('a dropped stream: Codex reconnects (an error line) and answers; under the template that is progress, not the end', async () => {
    const dir = tempDir('bc-cxe-');
    const fake = await startFakeResponses([
      { drop: true },
      { output: [say('Answered after a reconnect.')] },
      { drop: true },
      { output: [say('Answered after a reconnect.')] },
    ]);
    try {
      const env = { ...codexEnv(dir, codexHome(dir, fake)), CODEX_BIN: codex.bin, BACKCHANNEL_CONTROL: path.join(dir, 'control.sock') };
      const straight = await runCli(codex.bin, ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only', '--', 'Say hi'], {
        cwd: dir,
        env,
      });
      expect(straight.code, straight.stderr).toBe(0);
      expect(eventsOf(straight.stdout).filter((e) => e.type === 'error')).toHaveLength(1);
      matchesRecording('codex-exec-json-reconnect.jsonl', straight.stdout, dir, fake);

      const input = JSON.stringify({ prompt: 'Say hi', skip_git_repo_check: true });
      const run = await backchannel(['run', '--json', '--input', input, '--', 'node', AGENT], dir, env);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 'success', data: { text: 'Answered after a reconnect.' } });
      expect(fake.requests).toHaveLength(4);
    } finally {
      await fake.close();
    }
  });

  test('under the template, a refused key fails at once with the login hint, without the five retries', async () => {
    const dir = tempDir('bc-cxk-');
    const fake = await startFakeResponses(Array.from({ length: 10 }, () => ({ status: 401, message: 'Incorrect API key provided' })));
    try {
      const env = { ...codexEnv(dir, codexHome(dir, fake)), CODEX_BIN: codex.bin, BACKCHANNEL_CONTROL: path.join(dir, 'control.sock') };
      const input = JSON.stringify({ prompt: 'Say hi', skip_git_repo_check: true });
      const run = await backchannel(['run', '--json', '--input', input, '--', 'node', AGENT], dir, env);
      expect(run.code).toBe(1);
      const payload = JSON.parse(run.stdout) as { status: string; data: { message: string } };
      expect(payload.status).toBe('error');
      expect(JSON.stringify(payload)).toMatch(
        /the Codex CLI is not logged in: .*\(unexpected status 401 Unauthorized: Incorrect API key provided/,
      );
      expect(fake.requests.length).toBeLessThan(6);
    } finally {
      await fake.close();
    }
  });
});

describe.skipIf(codex.skip !== undefined).each(RUN_MODES)(`${codex.title} under the codex template (%s)`, (mode) => {
  const where = runMode(mode);

  test('a coding task: edits in its worktree, then a follow-up resumes the thread there', async () => {
    const dir = tempDir('bc-cxw-');
    const state = path.join(dir, 'state');
    const repo = makeRepo({ 'README.md': '# demo\n', 'src/app.ts': 'export const answer = 41;\n' });
    const before = checkoutHash(repo);
    // On a hub the second reply waits until the test has seen the task's step ("editing src/app.ts").
    let release!: () => void;
    const stepSeen = new Promise<void>((resolve) => (release = resolve));
    if (mode === 'in-process') release();
    const fake = await startFakeResponses([
      {
        output: [
          applyPatch(
            '*** Begin Patch\n*** Update File: src/app.ts\n@@\n-export const answer = 41;\n+export const answer = 42;\n*** End Patch\n',
          ),
        ],
      },
      { output: [say('Changed the answer in src/app.ts to 42.')], usage: { input_tokens: 300, output_tokens: 12 }, hold: stepSeen },
      { output: [call('exec_command', { cmd: "printf 'Answers 42.\\n' >> README.md" })] },
      { output: [say('Noted it in the README.')] },
    ]);
    try {
      const env = {
        ...codexEnv(dir, codexHome(dir, fake)),
        CODEX_BIN: codex.bin,
        XDG_STATE_HOME: state,
        CURSOR_IPC_DIR: path.join(state, 'ipc'),
        ...where.env(),
      };
      const input = (prompt: string) => JSON.stringify({ prompt, allow_writes: true });
      const running = backchannel(['run', '--worktree', '--input', input('Make the answer 42'), '--', 'node', AGENT], repo, env);
      if (mode === 'on a hub') {
        // The running task's current step, as the panel and `backchannel show` have it.
        const step = await waitFor(
          async () => {
            if (fake.requests.length < 2) return undefined;
            const list = await backchannel(['tasks', '--json'], repo, env);
            const [task] = JSON.parse(list.stdout) as Array<{ id: string }>;
            if (!task) return undefined;
            const shown = JSON.parse((await backchannel(['show', '--json', task.id], repo, env)).stdout) as {
              task: { lastPartial?: { message?: string; tool?: string; phase?: string; ok?: boolean } };
            };
            // The step's end is printed about when the next request goes out: wait for it, not for its start.
            return shown.task.lastPartial?.phase === 'completed' ? shown.task.lastPartial : undefined;
          },
          'the task to report its step',
          60_000,
          200,
        );
        expect(step).toMatchObject({ message: 'editing src/app.ts', tool: 'file_change', phase: 'completed', ok: true });
        release();
      }
      const first = await running;
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toContain('Changed the answer in src/app.ts to 42.');
      // The change, summed up after the run, names the file and how to review it.
      const id = /review with `backchannel diff ([0-9a-f-]+)`/.exec(first.stderr)?.[1];
      expect(id, first.stderr).toBeDefined();
      expect(first.stderr).toMatch(/^change: 1 file, \+1 −1 on branch backchannel\/[0-9a-f]{12} — review with `backchannel diff /m);
      expect(checkoutHash(repo)).toBe(before);
      expect(fs.readFileSync(path.join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 41;\n');

      const [record] = JSON.parse((await backchannel(['worktrees', '--json'], repo, env)).stdout) as Array<{ taskId: string; cwd: string }>;
      expect(record!.taskId).toBe(id);
      expect(fs.readFileSync(path.join(record!.cwd, 'src/app.ts'), 'utf8')).toBe('export const answer = 42;\n');
      // Codex worked in the worktree: its environment context names it, not the checkout.
      expect(JSON.stringify(fake.requests[0]!.body.input)).toContain(`<cwd>${record!.cwd}</cwd>`);
      const diff = await backchannel(['diff', id!], repo, env);
      expect(diff.code, diff.stderr).toBe(0);
      expect(diff.stdout).toContain('-export const answer = 41;');
      expect(diff.stdout).toContain('+export const answer = 42;');

      const session = (JSON.parse(/\{[\s\S]*\}\s*$/.exec(first.stdout)![0]) as { meta: { session_id: string } }).meta.session_id;
      expect(session).toMatch(/^[0-9a-f-]{36}$/);

      const next = await backchannel(
        ['run', '--follow-up', id!, '--input', input('Note it in the README'), '--', 'node', AGENT],
        repo,
        env,
      );
      expect(next.code, next.stderr).toBe(0);
      expect(next.stdout).toContain('Noted it in the README.');
      // Resumed: the follow-up's first request carries the first run's conversation, in the same worktree.
      const resumed = fake.requests[2]!;
      expect(userTexts(resumed)).toEqual(expect.arrayContaining(['Make the answer 42', 'Note it in the README']));
      expect(resumed.body.input.some((item) => item.type === 'function_call' && item.call_id === 'call_fake_1_0')).toBe(true);
      expect(resumed.headers['session-id']).toBe(session);
      expect(fs.readFileSync(path.join(record!.cwd, 'README.md'), 'utf8')).toBe('# demo\nAnswers 42.\n');
      expect(checkoutHash(repo)).toBe(before);
      // This run's usage only: the resumed thread's total (in Codex's session file) less the first run's.
      const nextPayload = JSON.parse(/\{[\s\S]*\}\s*$/.exec(next.stdout)![0]) as { meta: Record<string, unknown> };
      expect(nextPayload.meta.token_usage).toMatchObject({ input: 200, output: 20, total: 220 });
      expect(nextPayload.meta.thread_usage).toMatchObject({ input_tokens: 600, output_tokens: 42 });
      const stat = await backchannel(['diff', '--stat', id!], repo, env);
      expect(stat.stdout).toContain('README.md');
      expect(stat.stdout).toContain('src/app.ts');
      expect(gitIn(repo, 'status', '--porcelain')).toBe('');
    } finally {
      await fake.close();
    }
  });
});
