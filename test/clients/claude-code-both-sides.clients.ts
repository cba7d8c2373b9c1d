/**
 * Claude Code on both sides of the gateway (issue 34's end-to-end case): the real Claude Code
 * (pinned 2.1.332) is the **client**, through `ANTHROPIC_BASE_URL` pointed at a gateway whose model
 * is the claude-code template in bridge mode; the real Claude Code is also the **sub-agent**, driven
 * by the local fake Anthropic model server, which scripts calls to the bridged `Write` and `Edit`. Each
 * call goes out to the client as a `tool_use`, the client's own tool runs in its project, and its
 * result continues the same run: the file is in the client's project, the scratch workspace the
 * sub-agent ran in (a private one the gateway made, read from the sub-agent's own environment
 * message) is unchanged, and one task served the whole turn. The second case scripts a
 * Write into the scratch workspace first: the scratch-path guard answers it with a correction that
 * reaches the model, the client never sees it, and the counts say so (`/health`, the task's meta, insights).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { blocksOf, startFakeAnthropic, type FakeAnthropic, type FakeAnthropicRequest, type FakeTurn } from '../helpers/fake-anthropic.js';
import { makeRepo } from '../helpers/git-repo.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);
const BRIDGED_WRITE = 'mcp__backchannel__Write';
const CONTENT = 'written by the client, decided by the sub-agent\n';
const EDITED = 'written by the client, then edited, decided by the sub-agent\n';
const THINKING = 'The user wants hello.txt in their project: Write it there.';

/** What Claude Code needs to run headless against a local server, in a private HOME. */
function claudeEnv(baseUrl: string, key: string, home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: key,
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}

/** The text of a tool_result block's content (a string, or text blocks). */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? '').join('');
  return JSON.stringify(content);
}

/** One scripted call of the sub-agent's model to a bridged tool of the client. */
interface Step {
  tool: 'Write' | 'Edit';
  input: Record<string, unknown>;
}
const write = (file: string): Step => ({ tool: 'Write', input: { file_path: file, content: CONTENT } });
const edit = (file: string): Step => ({
  tool: 'Edit',
  input: { file_path: file, old_string: 'client, decided', new_string: 'client, then edited, decided' },
});

/** The sub-agent's working directory, from its Claude Code's own `# Environment` message. */
function subAgentCwd(request: FakeAnthropicRequest): string | undefined {
  const system = (request.body.messages ?? []).filter((m) => m.role === 'system').flatMap((m) => blocksOf(m));
  const texts = [
    ...system.map((b) => b.text ?? ''),
    ...(request.body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')),
  ];
  for (const text of texts) {
    const found = /Primary working directory: (\S+)/.exec(text)?.[1];
    if (found) return found;
  }
  return undefined;
}

/**
 * The sub-agent's model: the steps in turn (one per tool result seen; thinking before the first),
 * then an answer; `steps` gets the sub-agent's scratch directory, read from its request.
 */
function stepScript(steps: (scratch: string) => Step[], seen: { scratch?: string }): (request: FakeAnthropicRequest) => FakeTurn {
  return (request) => {
    const offered = (request.body.tools ?? []).some((t) => t.name === BRIDGED_WRITE);
    if (!offered) return { text: 'nothing to do' };
    seen.scratch ??= subAgentCwd(request);
    if (seen.scratch === undefined) return { text: 'no working directory in the request' };
    const results = (request.body.messages ?? []).flatMap((m) => blocksOf(m)).filter((b) => b.type === 'tool_result');
    const next = steps(seen.scratch)[results.length];
    if (next === undefined) return { text: `Done: ${resultText(results.at(-1)?.content)}` };
    const call = { tool: { name: `mcp__backchannel__${next.tool}`, input: next.input } };
    return results.length === 0 ? { thinking: THINKING, ...call } : call;
  };
}

/** The blocks of one type in the client's stream-json assistant messages. */
function clientBlocks(stdout: string, type: string): Array<{ type: string; [key: string]: unknown }> {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type?: string; message?: { content?: Array<{ type: string; [key: string]: unknown }> } })
    .filter((l) => l.type === 'assistant')
    .flatMap((l) => l.message?.content ?? [])
    .filter((b) => b.type === type);
}

/** The tool_use blocks in the client's stream-json assistant messages. */
function clientToolUses(stdout: string): Array<{ name: string; input: unknown }> {
  return clientBlocks(stdout, 'tool_use').map((b) => ({ name: String(b.name), input: b.input }));
}

interface BothSides {
  /** The client's project directory (its Claude Code's cwd). */
  project: string;
  /** The sub-agent's working directory: a private scratch directory the gateway made, under `workspacesDir`. */
  scratch: string;
  workspacesDir: string;
  model: FakeAnthropic;
  run: { code: number | null; stdout: string; stderr: string };
  result: { is_error?: boolean; result?: string } | undefined;
  gateway: Awaited<ReturnType<typeof startTestGateway>>;
}

/** One `claude -p` turn of the client through a gateway bridging to the sub-agent scripted by `steps(project, scratch)`. */
async function bothSides(steps: (project: string, scratch: string) => Step[]): Promise<BothSides> {
  const dir = tempDir('bc-cc2-');
  const project = makeRepo({ 'README.md': '# the client project\n' });
  const workspacesDir = path.join(dir, 'scratch');
  const seen: { scratch?: string } = {};
  const model = await startFakeAnthropic({ script: stepScript((scratch) => steps(project, scratch), seen) });
  const gateway = await startTestGateway(
    {
      api_key: 'k-client',
      default_model: 'bridged',
      workspaces_dir: workspacesDir,
      models: {
        bridged: {
          agent: 'claude-code',
          mode: 'bridge',
          allow_writes: true,
          env: { ...claudeEnv(model.url, 'k-sub-agent', tempDir('bc-cc2-sub-home-')), CLAUDE_BIN: claude.bin },
        },
      },
    },
    { dir },
  );
  const run = await runCli(
    claude.bin,
    ['-p', '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits', '--', 'Create hello.txt in my project'],
    { cwd: project, env: claudeEnv(gateway.url, 'k-client', tempDir('bc-cc2-client-home-')) },
  );
  const lines = run.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type?: string; is_error?: boolean; result?: string });
  const scratch = seen.scratch ?? '(the sub-agent never asked its model)';
  return { project, scratch, workspacesDir, model, run, result: lines.find((l) => l.type === 'result'), gateway };
}

describe.skipIf(claude.skip !== undefined)(`${claude.title} as the client and as the bridged sub-agent`, () => {
  const models: FakeAnthropic[] = [];
  afterAll(async () => {
    for (const model of models) await model.close();
  });

  describe('a bridged Write, then Edit', () => {
    let sides: BothSides;
    beforeAll(async () => {
      sides = await bothSides((project) => [write(path.join(project, 'hello.txt')), edit(path.join(project, 'hello.txt'))]);
      models.push(sides.model);
    });

    test("changes the file in the client's project and nothing in the scratch workspace", () => {
      const { project, scratch, workspacesDir, run, result } = sides;
      expect(result, run.stderr + run.stdout.slice(-3000)).toMatchObject({ is_error: false });
      expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe(EDITED);
      expect(path.dirname(scratch)).toBe(workspacesDir);
      expect(fs.existsSync(path.join(scratch, 'hello.txt'))).toBe(false);
      // The client's own Write and Edit answered, and its answer reached the sub-agent's model and the client.
      const answered = sides.model.requests
        .at(-1)!
        .body.messages!.flatMap((m) => blocksOf(m))
        .filter((b) => b.type === 'tool_result');
      expect(answered).toHaveLength(2);
      for (const result of answered) expect(resultText(result.content)).toContain(path.join(project, 'hello.txt'));
      expect(answered.some((r) => r.is_error === true)).toBe(false);
      expect(result?.result).toMatch(/^Done: /);
      // The sub-agent's thinking reached the client (Claude Code asks for it) as a signed thinking block.
      expect(clientBlocks(run.stdout, 'thinking')).toEqual([{ type: 'thinking', thinking: THINKING, signature: expect.any(String) }]);
      // The client saw the calls as its own Write and Edit (the relay's prefix is the sub-agent's business).
      const file = path.join(project, 'hello.txt');
      // (Claude Code shows its Edit input with its defaults filled in: `replace_all: false`.)
      expect(clientToolUses(run.stdout)).toEqual([
        { name: 'Write', input: write(file).input },
        { name: 'Edit', input: { ...edit(file).input, replace_all: false } },
      ]);
    });

    test('one task, one sub-agent run, served the whole turn', async () => {
      const bridged = (await sides.gateway.client.listTasks()).filter((t) => t.tags?.mode === 'bridge');
      expect(bridged).toHaveLength(1);
      expect(bridged[0]!.state).toBe('succeeded');
      // One Claude Code sub-agent: every main request to the model carries the same session id.
      const main = sides.model.requests.filter((r) => (r.body.tools ?? []).some((t) => t.name === BRIDGED_WRITE));
      expect(main.length).toBe(3);
      expect(new Set(main.map((r) => r.headers['x-claude-code-session-id'])).size).toBe(1);
    });
  });

  describe('a Write that names the scratch workspace', () => {
    let sides: BothSides;
    beforeAll(async () => {
      sides = await bothSides((project, scratch) => [write(path.join(scratch, 'hello.txt')), write(path.join(project, 'hello.txt'))]);
      models.push(sides.model);
    });

    test('is corrected by the guard, never reaches the client, and the retry does', async () => {
      const { project, scratch, run, result, model } = sides;
      expect(result, run.stderr + run.stdout.slice(-3000)).toMatchObject({ is_error: false });
      const results = model.requests
        .at(-1)!
        .body.messages!.flatMap((m) => blocksOf(m))
        .filter((b) => b.type === 'tool_result')
        .map((b) => resultText(b.content));
      expect(results).toHaveLength(2);
      expect(results[0]).toContain(`Not run: \`file_path\` names ${scratch}, your scratch directory`);
      expect(results[1]).toContain(path.join(project, 'hello.txt'));
      expect(clientToolUses(run.stdout).map((u) => u.input)).toEqual([{ file_path: path.join(project, 'hello.txt'), content: CONTENT }]);
      expect(fs.readFileSync(path.join(project, 'hello.txt'), 'utf8')).toBe(CONTENT);
      expect(fs.existsSync(path.join(scratch, 'hello.txt'))).toBe(false);
      const health = (await (await fetch(`${sides.gateway.url}/health`)).json()) as { bridge?: unknown };
      expect(health.bridge).toMatchObject({ violations: 1, corrections: 1 });
      const bridged = (await sides.gateway.client.listTasks()).filter((t) => t.tags?.mode === 'bridge');
      expect(bridged).toHaveLength(1);
      // The one task's own counts are in its meta (TaskRun.annotate), and insights sum them.
      const guard = { violations: 1, corrections: 1, unknown_tools: 0, replays: 0 };
      expect(bridged[0]!.annotations).toEqual({ bridge_guard: guard });
      expect(bridged[0]!.result?.meta).toMatchObject({ bridge_guard: guard });
      expect((await sides.gateway.client.insights({})).bridgeGuard).toEqual(guard);
    });
  });
});
