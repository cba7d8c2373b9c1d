/**
 * Bridge mode with the real clients as the gateway's clients (issue 46 §1): the pinned real `claude -p`
 * (Claude Code 2.1.332, Anthropic Messages), the pinned real Codex (Responses API) and OpenCode (Chat Completions) each run in a
 * scratch git project, against a gateway started *in that project* (`workspace:` is the project, as
 * with `cd <project> && backchannel gateway`), whose bridge-mode agent (the stand-in's
 * `bridge-anchored`) reads the project root from the gateway's anchoring and writes hello.txt there
 * through the client's own tool (Claude Code's Write, Codex's exec_command, OpenCode's write). Checked: the anchored
 * root is the project; the file lands there when the client allows it (`--permission-mode
 * acceptEdits`, `--sandbox workspace-write`) and not when it refuses (the default modes);
 * `--disallowedTools Write` removes the tool from what the agent is offered; the agent ran in a
 * private scratch directory; the task is labelled with the user's prompt; one failing `claude -p`
 * starts the agent once (its non-streamed fallback joins the failed stream's run), and so do one
 * failing `codex exec` (its own retries of the stream, maps in another key order, join it) and
 * one failing `opencode run`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { gitIn, makeRepo } from '../helpers/git-repo.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { STANDIN_AGENT, startTestGateway } from '../gateway/helpers.js';
import { printed, start } from '../hub/control/hub-process.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);
const codex = clientFor(PINS.codex);
const opencode = clientFor(PINS.opencode);
const PROMPT = 'Create hello.txt in my project';

/** A gateway started in `project` (its `workspace`), serving the anchored writer as `anchored` (the default). */
async function gatewayIn(project: string, key: string) {
  const dir = tempDir('bc-gwcb-');
  const env = { GATEWAY_PID_DIR: dir, GATEWAY_RUNS_FILE: path.join(dir, 'runs') };
  const gateway = await startTestGateway(
    {
      api_key: key,
      default_model: 'anchored',
      workspace: project,
      workspaces_dir: path.join(dir, 'scratch'),
      models: {
        anchored: { command: STANDIN_AGENT, mode: 'bridge', env: { ...env, GATEWAY_STANDIN: 'bridge-anchored' } },
        failing: { command: STANDIN_AGENT, env: { ...env, GATEWAY_STANDIN: 'fail-streaming' } },
      },
    },
    { dir },
  );
  const runs = () =>
    fs.existsSync(env.GATEWAY_RUNS_FILE) ? fs.readFileSync(env.GATEWAY_RUNS_FILE, 'utf8').split('\n').filter(Boolean) : [];
  return { gateway, dir, runs };
}

type TestGateway = Awaited<ReturnType<typeof gatewayIn>>;

/** The one bridged task of the gateway, with what its agent saw: the prompt and the tools offered. */
async function bridgedTask({ gateway, dir }: TestGateway) {
  const bridged = (await gateway.client.listTasks()).filter((t) => t.tags?.mode === 'bridge');
  expect(bridged).toHaveLength(1);
  const task = bridged[0]!;
  const prompt = fs.readFileSync(path.join(dir, `prompt-${task.id}.txt`), 'utf8');
  const tools = JSON.parse(fs.readFileSync(path.join(dir, `tools-${task.id}.json`), 'utf8')) as string[];
  return { task, prompt, tools, answer: String((task.result?.data as { text?: unknown } | undefined)?.text ?? '') };
}

/** The agent ran in a private scratch directory under the gateway's `workspaces_dir`, never the project. */
function expectPrivateScratch(prompt: string, dir: string, project: string): void {
  const scratch = /Your own working directory \((\S+)\) is a scratch directory/.exec(prompt)?.[1];
  expect(scratch, prompt.slice(0, 600)).toBeDefined();
  expect(path.dirname(scratch!)).toBe(path.join(dir, 'scratch'));
  expect(scratch).not.toBe(project);
}

describe.skipIf(claude.skip !== undefined)(`${claude.title} as the gateway's client, in bridge mode`, () => {
  function claudeEnv(baseUrl: string, key: string): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '',
      HOME: tempDir('bc-gwcb-home-'),
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: key,
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
  }

  /** One `claude -p` turn in a new scratch git project, with `flags`. */
  async function claudeTurn(flags: string[], model?: string) {
    const project = makeRepo({ 'README.md': '# the user project\n' });
    const gw = await gatewayIn(project, 'k-claude');
    const args = ['-p', '--output-format', 'stream-json', '--verbose', ...(model ? ['--model', model] : []), ...flags, '--', PROMPT];
    const run = await runCli(claude.bin, args, { cwd: project, env: claudeEnv(gw.gateway.url, 'k-claude') });
    const result = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { type?: string; is_error?: boolean; result?: string })
      .find((l) => l.type === 'result');
    return { project, gw, run, result };
  }

  test("--permission-mode acceptEdits: anchored on the project, the file lands there through Claude Code's Write", async () => {
    const { project, gw, run, result } = await claudeTurn(['--permission-mode', 'acceptEdits']);
    expect(result, run.stderr + run.stdout.slice(-2000)).toMatchObject({ is_error: false });
    const { task, prompt, tools, answer } = await bridgedTask(gw);
    expect(prompt).toContain(`in ${project}. `); // the anchored root is the project
    expect(tools).toContain('Write');
    expect(answer).toMatch(/^wrote: /);
    expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe('bridged\n');
    expect(gitIn(project, 'status', '--porcelain', '--untracked-files=all').trim()).toBe('?? hello.txt');
    expectPrivateScratch(prompt, gw.dir, project);
    expect(task.label).toBe(`gateway anchored: ${PROMPT}`);
    expect(task.state).toBe('succeeded');
  });

  test('the default permission mode: Claude Code refuses the Write, nothing is written', async () => {
    const { project, gw, run, result } = await claudeTurn([]);
    expect(result, run.stderr + run.stdout.slice(-2000)).toBeDefined();
    const { prompt, answer } = await bridgedTask(gw);
    expect(prompt).toContain(`in ${project}. `);
    // Claude Code's own refusal reached the agent as the tool's error.
    expect(answer).toBe(
      `refused: tool call Write failed: Claude requested permissions to write to ${path.join(project, 'hello.txt')}, but you haven't granted it yet.`,
    );
    expect(fs.existsSync(path.join(project, 'hello.txt'))).toBe(false);
    expect(gitIn(project, 'status', '--porcelain', '--untracked-files=all').trim()).toBe('');
  });

  test('--disallowedTools Write: the agent is not offered Write at all', async () => {
    const { project, gw, run, result } = await claudeTurn(['--permission-mode', 'acceptEdits', '--disallowedTools', 'Write']);
    expect(result, run.stderr + run.stdout.slice(-2000)).toMatchObject({ is_error: false });
    const { tools, answer } = await bridgedTask(gw);
    expect(tools).not.toContain('Write');
    expect(tools).toContain('Read');
    expect(answer).toBe('no write tool');
    expect(fs.existsSync(path.join(project, 'hello.txt'))).toBe(false);
  });

  test('`cd <project> && backchannel gateway`: the real command, started in the project, anchors there and writes there', async () => {
    const project = makeRepo({ 'README.md': '# the user project\n' });
    const dir = tempDir('bc-gwcb-cli-');
    const config = path.join(dir, 'gateway.yaml');
    const anchored = { command: STANDIN_AGENT, mode: 'bridge', env: { GATEWAY_PID_DIR: dir, GATEWAY_STANDIN: 'bridge-anchored' } };
    fs.writeFileSync(config, JSON.stringify({ port: 0, api_key: 'k-cli', default_model: 'anchored', models: { anchored } }));
    const state = path.join(dir, 'state');
    const env = {
      ...process.env,
      XDG_STATE_HOME: state,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      BACKCHANNEL_CONTROL: path.join(dir, 'none.sock'),
    };
    const gateway = start(['gateway', '--local', '--config', config], env, project); // no `workspace:`: where it started
    const baseURL = await printed(gateway, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
    const args = ['-p', '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits', '--', PROMPT];
    const run = await runCli(claude.bin, args, { cwd: project, env: claudeEnv(baseURL.replace(/\/v1$/, ''), 'k-cli') });
    expect(run.stdout, run.stderr + run.stdout.slice(-2000)).toContain('"is_error":false');
    expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe('bridged\n');
    const prompts = fs.readdirSync(dir).filter((name) => name.startsWith('prompt-'));
    expect(prompts).toHaveLength(1);
    const prompt = fs.readFileSync(path.join(dir, prompts[0]!), 'utf8');
    expect(prompt).toContain(`in ${project}. `);
    const scratch = /Your own working directory \((\S+)\) is a scratch directory/.exec(prompt)?.[1];
    expect(scratch?.startsWith(`${state}/`), scratch).toBe(true); // the default workspaces_dir, never the project
    gateway.child.kill('SIGINT');
    expect(await gateway.exited).toBe(0);
  });

  test("a stream that fails: Claude Code's non-streamed fallback joins the run, the agent runs once", async () => {
    const { gw, run, result } = await claudeTurn([], 'failing');
    expect(result, run.stderr + run.stdout.slice(-2000)).toMatchObject({ is_error: true });
    expect(result?.result).toContain('lost the thread');
    expect(gw.runs()).toEqual(['fail-streaming']);
    expect(await gw.gateway.client.listTasks()).toHaveLength(1);
  });
});

describe.skipIf(codex.skip !== undefined)(`${codex.title} as the gateway's client, in bridge mode`, () => {
  /** One `codex exec` turn in a new scratch git project, with `flags`. */
  async function codexTurn(flags: string[], model = 'anchored') {
    const project = makeRepo({ 'README.md': '# the user project\n' });
    const gw = await gatewayIn(project, 'k-codex');
    const home = tempDir('bc-gwcb-codex-');
    const config = [`model = "${model}"`, 'model_provider = "backchannel"', '', '[model_providers.backchannel]'];
    config.push('name = "Backchannel gateway"', `base_url = "${gw.gateway.baseURL}"`, 'wire_api = "responses"');
    config.push('env_key = "BACKCHANNEL_GATEWAY_KEY"', '');
    fs.writeFileSync(path.join(home, 'config.toml'), config.join('\n'));
    const run = await runCli(codex.bin, ['exec', ...flags, PROMPT], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: home, BACKCHANNEL_GATEWAY_KEY: 'k-codex' },
    });
    return { project, gw, run };
  }

  test("--sandbox workspace-write: anchored on the project, the file lands there through Codex's exec_command", async () => {
    const { project, gw, run } = await codexTurn(['--sandbox', 'workspace-write']);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const { task, prompt, tools, answer } = await bridgedTask(gw);
    expect(prompt).toContain(`in ${project}. `);
    expect(tools).toContain('exec_command');
    expect(answer).toMatch(/^wrote: [\s\S]*Process exited with code 0/);
    expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe('bridged\n');
    expectPrivateScratch(prompt, gw.dir, project);
    expect(task.label).toBe(`gateway anchored: ${PROMPT}`);
  });

  test('--sandbox read-only: the write does not happen', async () => {
    const { project, gw, run } = await codexTurn(['--sandbox', 'read-only']);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const { prompt, answer } = await bridgedTask(gw);
    expect(prompt).toContain(`in ${project}. `);
    // Codex ran the command in its read-only sandbox, and told the agent so.
    expect(answer).toMatch(/Process exited with code [1-9][\s\S]*Read-only file system/);
    expect(fs.existsSync(path.join(project, 'hello.txt'))).toBe(false);
  });

  test('a stream that fails: Codex retries it by itself, every retry joins the run, the agent runs once', async () => {
    const { gw, run } = await codexTurn([], 'failing');
    expect(run.code, run.stderr.slice(-2000)).not.toBe(0);
    expect(run.stderr + run.stdout).toContain('lost the thread');
    expect(gw.runs()).toEqual(['fail-streaming']);
    expect(await gw.gateway.client.listTasks()).toHaveLength(1);
  });
});

describe.skipIf(opencode.skip !== undefined)(`${opencode.title} as the gateway's client, in bridge mode`, () => {
  /** One `opencode run` turn in a new scratch git project, with the gateway's `model`. */
  async function opencodeTurn(model: string) {
    const project = makeRepo({ 'README.md': '# the user project\n' });
    const gw = await gatewayIn(project, 'k-opencode');
    const home = tempDir('bc-gwcb-opencode-');
    const config = path.join(home, 'config', 'opencode');
    fs.mkdirSync(config, { recursive: true });
    const options = { baseURL: gw.gateway.baseURL, apiKey: '{env:BACKCHANNEL_GATEWAY_KEY}' };
    const provider = { npm: '@ai-sdk/openai-compatible', name: 'Backchannel gateway', options, models: { [model]: { name: model } } };
    const settings = { provider: { backchannel: provider }, model: `backchannel/${model}`, small_model: `backchannel/${model}` };
    fs.writeFileSync(path.join(config, 'opencode.json'), JSON.stringify(settings));
    const xdg = (name: string) => path.join(home, name);
    const run = await runCli(opencode.bin, ['run', PROMPT], {
      cwd: project,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        XDG_CONFIG_HOME: xdg('config'),
        XDG_DATA_HOME: xdg('data'),
        XDG_CACHE_HOME: xdg('cache'),
        XDG_STATE_HOME: xdg('state'),
        BACKCHANNEL_GATEWAY_KEY: 'k-opencode',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
      },
    });
    return { project, gw, run };
  }

  test("anchored on the project from OpenCode's <env>, the file lands there through OpenCode's write", async () => {
    const { project, gw, run } = await opencodeTurn('anchored');
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const { task, prompt, answer } = await bridgedTask(gw);
    expect(prompt).toContain(`in ${project}. `);
    expect(answer).toMatch(/^wrote: /);
    expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe('bridged\n');
    expectPrivateScratch(prompt, gw.dir, project);
    expect(task.label).toBe(`gateway anchored: "${PROMPT}"`); // OpenCode sends `opencode run`'s message quoted
  });

  test('a stream that fails: OpenCode reports the failure, the agent runs once', async () => {
    const { gw, run } = await opencodeTurn('failing');
    expect(run.code, run.stderr + run.stdout).not.toBe(0);
    expect(run.stderr + run.stdout).toContain('lost the thread');
    expect(gw.runs()).toEqual(['fail-streaming']);
    expect(await gw.gateway.client.listTasks()).toHaveLength(1);
  });
});
