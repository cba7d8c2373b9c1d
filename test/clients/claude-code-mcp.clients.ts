/**
 * The real Claude Code CLI (pinned) with `backchannel mcp` as its MCP server, against the fake
 * Anthropic server (test/helpers/fake-anthropic.ts) playing a model that calls start_task and then
 * wait_for_task: Claude Code starts a real sub-agent through Backchannel (on a running hub, so the
 * terminal sees it) and receives its result — over stdio (`--mcp-config`), and over HTTP, the server added with
 * `claude mcp add --transport http … --header "Authorization: Bearer …"` to the hub's /mcp (docs/mcp.md). Part of
 * the real-client suite (`npm run test:clients`, run by .ci/run, which installs the pinned CLI).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fixture } from '../helpers/core.js';
import { clientFor } from '../helpers/real-clients.js';
import { BIN, cli, hubEnv, printed, start, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { delegation } from '../mcp/fake-delegating-model.js';
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic.js';
import { PINS } from './pins.js';

const CLAUDE = clientFor(PINS.claudeCode);
const PREFIX = 'mcp__backchannel__';

let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** Runs `claude <args>` with the fake model; its exit code, stdout and stderr. */
async function runClaude(hub: HubEnv, home: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = {
    ...hub.env,
    HOME: home,
    ANTHROPIC_BASE_URL: fake!.url,
    ANTHROPIC_API_KEY: 'dummy',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // Tool search would defer MCP tools behind ToolSearch; the fake model calls them directly.
    ENABLE_TOOL_SEARCH: 'false',
  };
  const child = spawn(CLAUDE.bin, args, { env, cwd: hub.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe.skipIf(CLAUDE.skip !== undefined)(`${CLAUDE.title} over MCP`, () => {
  test('over HTTP: added with claude mcp add --transport http and the bearer token, it runs a task on the hub', async () => {
    const hub = hubEnv();
    const serve = start(['serve', '--data-dir', path.join(hub.dir, 'data')], hub.env);
    const url = await printed(serve, /MCP \(Streamable HTTP\): (\S+)/, 'the MCP URL');
    const token = await printed(serve, /MCP bearer token \(shown once\): (\S+)/, 'the MCP token');
    fake = await startFakeAnthropic({
      script: delegation({
        toolPrefix: PREFIX,
        startArgs: { command: fixture('sdk-progress.mjs'), input: { from: 'claude-over-http' }, label: 'delegated over http' },
      }),
    });
    // The endpoint answers before Claude Code starts: its headless runs wait about two seconds for a server to connect.
    const discover = { jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} };
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` };
    expect((await fetch(url, { method: 'POST', headers, body: JSON.stringify(discover) })).status).toBe(200);
    const home = path.join(hub.dir, 'home');
    fs.mkdirSync(home);
    const added = await runClaude(hub, home, [
      'mcp',
      'add',
      '--transport',
      'http',
      'backchannel',
      url,
      '--header',
      `Authorization: Bearer ${token}`,
    ]);
    expect(added.code, added.stderr + added.stdout).toBe(0);
    const run = await runClaude(hub, home, [
      '-p',
      'Analyse the project in the background with Backchannel and report.',
      '--output-format',
      'stream-json',
      '--verbose',
      '--allowedTools',
      `${PREFIX}start_task,${PREFIX}wait_for_task`,
    ]);
    const context = `exit ${run.code}\nstderr: ${run.stderr.slice(-2000)}\nstdout: ${run.stdout.slice(-3000)}`;
    expect(run.code, context).toBe(0);
    const lines = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, any>);
    const init = lines.find((l) => l.type === 'system' && l.subtype === 'init');
    expect(init?.mcp_servers, context).toEqual([expect.objectContaining({ name: 'backchannel', status: 'connected' })]);
    const result = lines.find((l) => l.type === 'result');
    expect(result?.subtype, context).toBe('success');
    expect(result?.result, context).toMatch(/The sub-agent finished.*succeeded.*claude-over-http/);
    // The hub ran what Claude Code asked for, once per start_task call (on a loaded machine a run may take two turns).
    const starts = lines
      .filter((l) => l.type === 'assistant')
      .flatMap((l) => l.message.content as Array<{ type: string; name?: string }>)
      .filter((block) => block.type === 'tool_use' && block.name === `${PREFIX}start_task`);
    const tasks = JSON.parse((await cli(['tasks', '--json'], hub.env)).stdout) as Array<{ label: string; state: string }>;
    expect(starts.length, context).toBeGreaterThan(0);
    expect(tasks, context).toHaveLength(starts.length);
    expect(tasks.every((task) => task.label === 'delegated over http' && task.state === 'succeeded')).toBe(true);
  }, 120_000);

  test('starts a real sub-agent through backchannel mcp and receives its result', async () => {
    const hub = hubEnv();
    await startHub(hub);
    fake = await startFakeAnthropic({
      script: delegation({
        toolPrefix: PREFIX,
        startArgs: { command: fixture('sdk-progress.mjs'), input: { from: 'claude-code' }, label: 'delegated by claude' },
      }),
    });
    const home = path.join(hub.dir, 'home');
    fs.mkdirSync(home);
    const config = path.join(hub.dir, 'mcp.json');
    const serverEnv = { BACKCHANNEL_CONTROL: hub.socket, XDG_STATE_HOME: String(hub.env.XDG_STATE_HOME), PATH: String(process.env.PATH) };
    fs.writeFileSync(
      config,
      JSON.stringify({ mcpServers: { backchannel: { command: process.execPath, args: [BIN, 'mcp'], env: serverEnv } } }),
    );
    const args = [
      '-p',
      'Analyse the project in the background with Backchannel and report.',
      '--output-format',
      'stream-json',
      '--verbose',
      '--mcp-config',
      config,
      '--strict-mcp-config',
      '--allowedTools',
      `${PREFIX}start_task,${PREFIX}wait_for_task`,
    ];
    const env = {
      ...hub.env,
      HOME: home,
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: 'dummy',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // Tool search would defer MCP tools behind ToolSearch; the fake model calls them directly.
      ENABLE_TOOL_SEARCH: 'false',
    };
    const child = spawn(CLAUDE.bin, args, { env, cwd: hub.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
    const lines = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, any>);
    const context = `exit ${code}\nstderr: ${stderr.slice(-2000)}\nstdout: ${stdout.slice(-3000)}`;
    expect(code, context).toBe(0);
    const init = lines.find((l) => l.type === 'system' && l.subtype === 'init');
    expect(init?.mcp_servers, context).toEqual([expect.objectContaining({ name: 'backchannel', status: 'connected' })]);
    expect(fake.requests.some((r) => r.body.tools?.some((tool) => tool.name === `${PREFIX}start_task`))).toBe(true);
    // Claude Code ran both tools and got the sub-agent's result back.
    const toolResults = lines
      .filter((l) => l.type === 'user')
      .flatMap((l) => l.message.content as Array<{ type: string; content: unknown; is_error?: boolean }>)
      .filter((block) => block.type === 'tool_result');
    expect(toolResults.length, context).toBe(2);
    expect(
      toolResults.every((block) => block.is_error !== true),
      context,
    ).toBe(true);
    expect(JSON.stringify(toolResults[1]!.content)).toContain('claude-code');
    const result = lines.find((l) => l.type === 'result');
    expect(result?.subtype, context).toBe('success');
    expect(result?.result).toMatch(/The sub-agent finished.*succeeded.*claude-code/);
    // The hub ran it: the terminal sees the task Claude Code started.
    const tasks = JSON.parse((await cli(['tasks', '--json'], hub.env)).stdout) as Array<{ label: string; state: string }>;
    expect(tasks).toEqual([expect.objectContaining({ label: 'delegated by claude', state: 'succeeded' })]);
  }, 90_000);
});
