/**
 * `worktree: true` models (docs/gateway.md, "A worktree per session"): real git repositories, real
 * HTTP clients, a stand-in coding agent (test/fixtures/gateway/agent.mjs `edit`) that writes in its
 * working directory. A session's agent edits land in a worktree the broker made, never in the user's
 * checkout; the session's next turn continues in the same worktree, linked to the first (one thread);
 * the change is recorded as for any coding task (`backchannel diff`, with and without a hub); a
 * workspace that is no git repository stops the gateway at config load, in one line.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { clientOf } from '../../src/client/index.js';
import { GatewayConfigError, resolveGatewayConfig, startGateway } from '../../src/gateway/index.js';
import type { TaskSnapshot } from '../../src/model/task.js';
import { makeBroker, ROOT, tempDir, waitFor } from '../helpers/core.js';
import { checkoutHash, gitIn, linkedWorktrees, makeRepo } from '../helpers/git-repo.js';
import { cli, hubEnv, printed, start, startHub } from '../hub/control/hub-process.js';
import { raw, STANDIN_AGENT, startTestGateway } from './helpers.js';

const coder = (repo: string, extra: Record<string, unknown> = {}) => ({
  command: STANDIN_AGENT,
  env: { GATEWAY_STANDIN: 'edit' },
  allow_writes: true,
  cwd: repo,
  worktree: true,
  ...extra,
});

interface Seen {
  cwd: string;
  resume: string | null;
  notes: string;
}

type Message = { role: string; content: string };

/** One non-streamed chat turn of session `session` (or of none): what the agent saw, its task id, the answer text. */
async function turn(baseURL: string, messages: Message[], session?: string, headers: Record<string, string> = {}) {
  const res = await raw(
    `${baseURL}/chat/completions`,
    { model: 'coder', messages },
    { headers: { ...(session ? { 'x-session-id': session } : {}), ...headers } },
  );
  expect(res.status, res.text).toBe(200);
  const text: string = res.json.choices[0].message.content;
  return { seen: JSON.parse(text) as Seen, taskId: String(res.headers['x-backchannel-task-id']), text };
}

/** `backchannel <args>` with `env`: exit code and output. */
function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/backchannel.js'), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('worktree: true models', () => {
  test("a session's edits land in a worktree of its own, the checkout stays byte-identical, and its next turn continues in the same worktree", async () => {
    const repo = makeRepo({ 'README.md': '# demo\n', 'src/app.ts': 'export const app = 1;\n' });
    const before = checkoutHash(repo);
    const dir = tempDir('bc-gwwt-');
    const gw = await startTestGateway({ models: { coder: coder(path.join(repo, 'src')) } }, { dir });

    const first = await turn(gw.baseURL, [{ role: 'user', content: 'Add the first line' }], 'alice');
    // In a worktree the broker made (on a branch of its own), in the same subdirectory as `cwd`.
    const snapshot = async () => new Map((await gw.client.listTasks()).map((task) => [task.id, task]));
    const one = (await snapshot()).get(first.taskId)!;
    expect(one.worktree?.repo).toBe(fs.realpathSync(repo));
    expect(first.seen.cwd).toBe(path.join(one.worktree!.worktree, 'src'));
    expect(linkedWorktrees(repo)).toEqual([one.worktree!.worktree]);
    expect(first.seen.notes).toBe('Add the first line\n');
    expect(fs.existsSync(path.join(repo, 'src', 'notes.md'))).toBe(false);
    expect(checkoutHash(repo)).toBe(before);

    // The session's next turn: the same worktree, resuming the agent, linked to the first task.
    const second = await turn(
      gw.baseURL,
      [
        { role: 'user', content: 'Add the first line' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'Add the second line' },
      ],
      'alice',
    );
    expect(second.seen.cwd).toBe(first.seen.cwd);
    expect(second.seen.resume).toBe('agent-session-1');
    expect(second.seen.notes).toBe('Add the first line\nAdd the second line\n');
    await waitFor(async () => (await snapshot()).get(second.taskId)?.change, 'the second turn’s change to be recorded');
    const two = (await snapshot()).get(second.taskId)!;
    expect(two.parent).toBe(first.taskId);
    expect(two.worktree).toEqual(one.worktree);
    // The change of the thread, recorded against the base: both turns' lines.
    expect(two.change).toMatchObject({ files: [{ path: 'src/notes.md', status: 'added', insertions: 2 }] });
    const { diff } = await gw.client.taskChange(second.taskId);
    expect(diff).toContain('+Add the first line\n+Add the second line\n');

    // Another session: a worktree of its own, from the base again.
    const other = await turn(gw.baseURL, [{ role: 'user', content: 'Start over' }], 'bob');
    expect(other.seen.cwd).not.toBe(first.seen.cwd);
    expect(other.seen.notes).toBe('Start over\n');
    expect(linkedWorktrees(repo)).toHaveLength(2);
    expect(checkoutHash(repo)).toBe(before);

    // Without a hub, `backchannel diff` reads the same registry (the default data directory's).
    await waitFor(async () => (await snapshot()).get(other.taskId)?.change, 'the other session’s change to be recorded');
    const env = { ...process.env, BACKCHANNEL_CONTROL: path.join(dir, 'no-hub.sock') };
    const stat = await runCli(['diff', '--stat', second.taskId], env);
    expect(stat.stderr).toBe('');
    expect(stat.code).toBe(0);
    expect(stat.stdout).toContain('src/notes.md');
    const whole = await runCli(['diff', second.taskId], env);
    expect(whole.stdout).toContain('+Add the second line');
    expect(checkoutHash(repo)).toBe(before);
  });

  test('turns of one session sent at once take their turns in its one worktree; with sessions off, each request has a worktree of its own', async () => {
    const repo = makeRepo();
    const before = checkoutHash(repo);
    const gw = await startTestGateway({ models: { coder: coder(repo) } });
    const turns = await Promise.all(['First', 'Second', 'Third'].map((content) => turn(gw.baseURL, [{ role: 'user', content }], 'carol')));
    expect(new Set(turns.map((t) => t.seen.cwd)).size).toBe(1);
    const notes = turns.map((t) => t.seen.notes).sort((a, b) => a.length - b.length);
    expect(notes.map((n) => n.split('\n').length - 1)).toEqual([1, 2, 3]);
    // Each turn is a follow-up of the one before it: one chain of parents, one thread.
    const byId = new Map((await gw.client.listTasks()).map((task) => [task.id, task]));
    const parents = turns.map((t) => byId.get(t.taskId)!.parent).filter(Boolean);
    expect(parents).toHaveLength(2);
    expect(new Set(parents).size).toBe(2);
    expect(checkoutHash(repo)).toBe(before);

    const off = await startTestGateway({ models: { coder: coder(repo) }, sessions: { max: 0 } });
    const a = await turn(off.baseURL, [{ role: 'user', content: 'One' }], 'dave');
    const b = await turn(off.baseURL, [{ role: 'user', content: 'Two' }], 'dave');
    expect(a.seen.cwd).not.toBe(b.seen.cwd);
    expect(b.seen.notes).toBe('Two\n');
    expect(checkoutHash(repo)).toBe(before);
  });

  test('side requests a worktree model answers (`side_requests: run`) run in a worktree of their own, never in the checkout', async () => {
    const repo = makeRepo();
    const before = checkoutHash(repo);
    const gw = await startTestGateway({ models: { coder: coder(repo) }, side_requests: 'run' });
    const main = await turn(gw.baseURL, [{ role: 'user', content: 'Fix the bug' }], 'frank');
    const side = await turn(
      gw.baseURL,
      [
        { role: 'system', content: 'You are a title generator. Generate a short title for the conversation.' },
        { role: 'user', content: 'Fix the bug' },
      ],
      'frank',
    );
    expect(side.seen.cwd).not.toBe(main.seen.cwd);
    expect(side.seen.notes).toBe('Fix the bug\n');
    expect(main.seen.notes).toBe('Fix the bug\n');
    expect(linkedWorktrees(repo)).toHaveLength(2);
    expect(checkoutHash(repo)).toBe(before);
  });

  test('a worktree model starts from its `base`', async () => {
    const repo = makeRepo({ 'README.md': '# demo\n' });
    gitIn(repo, 'checkout', '-q', '-b', 'release');
    fs.writeFileSync(path.join(repo, 'RELEASE.md'), 'v1\n');
    gitIn(repo, 'add', '-A');
    gitIn(repo, 'commit', '-q', '-m', 'release notes');
    gitIn(repo, 'checkout', '-q', 'main');
    const gw = await startTestGateway({ models: { coder: coder(repo, { base: 'release' }) } });
    const { seen, taskId } = await turn(gw.baseURL, [{ role: 'user', content: 'Go' }]);
    expect(fs.readFileSync(path.join(seen.cwd, 'RELEASE.md'), 'utf8')).toBe('v1\n');
    expect((await gw.client.listTasks()).find((task) => task.id === taskId)!.worktree?.base).toBe('release');
    expect(fs.existsSync(path.join(repo, 'RELEASE.md'))).toBe(false);
  });

  test('a workspace that cannot have a worktree stops the gateway at config load, in one line', async () => {
    const plain = tempDir('bc-gwwt-plain-');
    const empty = path.join(tempDir('bc-gwwt-empty-'), 'repo');
    fs.mkdirSync(empty);
    gitIn(empty, 'init', '-q', '-b', 'main');
    const repo = makeRepo();
    const refused = (raw: Record<string, unknown>): string => {
      try {
        resolveGatewayConfig(raw, process.env, plain);
      } catch (error) {
        expect(error).toBeInstanceOf(GatewayConfigError);
        expect((error as Error).message).not.toContain('\n');
        return (error as Error).message;
      }
      throw new Error('the config was accepted');
    };
    expect(refused({ workspace: plain, models: { coder: { command: 'node', worktree: true } } })).toMatch(
      new RegExp(
        `^\`models\\.coder\` has \`worktree: true\`, but its workspace ${plain} cannot have one: ${plain} is not in a git repository; a worktree needs one \\(.*\\)\\. Point`,
      ),
    );
    expect(refused({ models: { coder: { command: 'node', cwd: empty, worktree: true } } })).toContain(
      `but its cwd ${empty} cannot have one: the repository ${fs.realpathSync(empty)} has no commit yet`,
    );
    expect(refused({ models: { coder: { command: 'node', cwd: repo, worktree: true, base: 'nope' } } })).toContain(
      `base "nope" does not exist in ${fs.realpathSync(repo)}`,
    );
    expect(refused({ models: { coder: { command: 'node', cwd: repo, base: 'main' } } })).toBe(
      '`models.coder.base` is the base of a worktree: add `worktree: true`, or remove it',
    );
    expect(refused({ models: { coder: { command: 'node', cwd: repo, worktree: 'yes' } } })).toMatch(
      /^Expected `models\.coder\.worktree` to be true or false/,
    );
    // The repository is found once, at load.
    const config = resolveGatewayConfig({ models: { coder: { command: 'node', cwd: path.join(repo, 'src'), worktree: true } } });
    expect(config.models.coder!.worktree).toEqual({ repo: fs.realpathSync(repo) });

    // `backchannel gateway` says it and exits.
    const file = path.join(plain, 'gw.yaml');
    fs.writeFileSync(file, `auth: none\nworkspace: ${plain}\nmodels:\n  coder: { command: node, worktree: true }\n`);
    const run = await runCli(['gateway', '--port', '0', '--config', file], {
      ...process.env,
      BACKCHANNEL_CONTROL: path.join(plain, 'no-hub.sock'),
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`is not in a git repository; a worktree needs one`);
  });

  test("an embedding app's client whose broker keeps no worktrees stops a worktree model's gateway at start", async () => {
    const repo = makeRepo();
    const { broker } = makeBroker();
    const client = clientOf(broker);
    expect(client.keepsWorktrees).toBe(false);
    const config = resolveGatewayConfig({ port: 0, auth: 'none', models: { coder: coder(repo) } });
    await expect(startGateway({ config, client })).rejects.toThrow(
      new GatewayConfigError(
        'model(s) coder have `worktree: true`, but the client given runs its tasks on a broker that keeps no worktrees (give the broker a `dataDir` or a `worktreeDir`)',
      ),
    );
  });

  test('on a running hub: the session’s tasks run in the hub’s worktree, one thread, and `backchannel diff` shows the change', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const repo = makeRepo();
    const before = checkoutHash(repo);
    const config = path.join(hub.dir, 'gateway.yaml');
    fs.writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', models: { coder: coder(repo) } }));
    const gateway = start(['gateway', '--config', config], hub.env);
    const baseURL = await printed(gateway, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
    expect(gateway.stdout()).toContain(`Tasks run on the hub at ${hub.socket}`);

    const first = await turn(baseURL, [{ role: 'user', content: 'Hub line one' }], 'erin');
    const second = await turn(
      baseURL,
      [
        { role: 'user', content: 'Hub line one' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'Hub line two' },
      ],
      'erin',
    );
    expect(second.seen.cwd).toBe(first.seen.cwd);
    expect(second.seen.notes).toBe('Hub line one\nHub line two\n');
    expect(checkoutHash(repo)).toBe(before);
    // The hub's own worktrees (under its data directory), listed with the thread's two tasks.
    expect(first.seen.cwd.startsWith(path.join(hub.dir, 'data'))).toBe(true);
    const tasks = async () => JSON.parse((await cli(['tasks', '--json', '--limit', '100'], hub.env)).stdout) as TaskSnapshot[];
    await waitFor(async () => (await tasks()).find((task) => task.id === second.taskId)?.change, 'the hub to record the change');
    const listed = await tasks();
    expect(listed.find((task) => task.id === second.taskId)?.parent).toBe(first.taskId);
    const stat = await cli(['diff', '--stat', second.taskId], hub.env);
    expect(stat.stderr).toBe('');
    expect(stat.stdout).toContain('notes.md');
    expect((await cli(['diff', second.taskId], hub.env)).stdout).toContain('+Hub line one\n+Hub line two');
    gateway.child.kill('SIGINT');
    await gateway.exited;
  });
});
