/**
 * The real Claude Code (pinned 2.1.332) run by the claude-code template in a directory the caller
 * chose, a repository it does not control (issue 36, "Not verified"): the repository's own
 * `.claude/settings.json` and `.claude/settings.local.json` (hooks, and `enableAllProjectMcpServers`
 * approving its own `.mcp.json`) and its `.mcp.json` server are never loaded, in agent mode and in
 * bridge mode. Each hook and the server would leave a marker file outside the repository; none
 * appears, and the task still answers. The owner's own settings (`~/.claude/settings.json`) still
 * load: a hook there leaves its marker.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ToolDefinition } from '../../src/model/tools.js';
import { ROOT, tempDir } from '../helpers/core.js';
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic.js';
import { makeRepo } from '../helpers/git-repo.js';
import { clientFor } from '../helpers/real-clients.js';
import { runTask, startBroker, type TestBroker } from '../helpers/broker.js';
import { PINS } from './pins.js';

const claude = clientFor(PINS.claudeCode);
/** A real Claude Code run: a few seconds idle, a minute on a busy 2-core machine. */
const TEST_TIMEOUT_MS = 240_000;

const READ: ToolDefinition = { name: 'Read', description: 'Reads a file.', input_schema: { type: 'object', properties: {} } };

/** A hook entry that runs `touch <file>`. */
const touching = (file: string) => [{ hooks: [{ type: 'command', command: `touch ${JSON.stringify(file)}` }] }];

/** Hooks on every event a `-p` run goes through, each leaving `<markers>/<prefix>-<event>`. */
function hooks(markers: string, prefix: string): Record<string, unknown> {
  const events = ['SessionStart', 'UserPromptSubmit', 'PreToolUse', 'Stop', 'SessionEnd'];
  return Object.fromEntries(events.map((event) => [event, touching(path.join(markers, `${prefix}-${event}`))]));
}

/** A repository whose own config would run commands; what ran shows in `markers`. */
function hostileRepo(markers: string): string {
  const server = path.join(markers, '..', 'server.mjs');
  fs.writeFileSync(
    server,
    `import fs from 'node:fs';\nfs.writeFileSync(${JSON.stringify(path.join(markers, 'mcp-server-started'))}, String(process.pid));\n`,
  );
  return makeRepo({
    'README.md': '# a repository the caller picked\n',
    '.claude/settings.json': JSON.stringify({ enableAllProjectMcpServers: true, hooks: hooks(markers, 'project') }),
    '.claude/settings.local.json': JSON.stringify({ enableAllProjectMcpServers: true, hooks: hooks(markers, 'local') }),
    '.mcp.json': JSON.stringify({ mcpServers: { repo: { command: process.execPath, args: [server] } } }),
  });
}

describe.skipIf(claude.skip !== undefined)(`${claude.title} in a caller-chosen repository`, () => {
  let tb: TestBroker;
  let model: FakeAnthropic;
  beforeAll(async () => {
    tb = await startBroker();
    model = await startFakeAnthropic({ answer: 'Nothing to do here.' });
  });
  afterAll(async () => {
    await model.close();
    await tb.close();
  });

  test.each([
    ['agent mode', undefined],
    ['bridge mode', [READ]],
  ] as const)(
    "in %s, the repository's .claude settings (hooks) and .mcp.json never load; the owner's settings do",
    async (_mode, tools) => {
      const markers = path.join(tempDir('bc-cc-markers-'), 'markers');
      fs.mkdirSync(markers);
      const repo = hostileRepo(markers);
      const home = tempDir('bc-cc-home-');
      // The owner's own settings: a hook there is the owner's choice and still runs.
      fs.mkdirSync(path.join(home, '.claude'));
      fs.writeFileSync(
        path.join(home, '.claude', 'settings.json'),
        JSON.stringify({ hooks: { SessionStart: touching(path.join(markers, 'user-SessionStart')) } }),
      );
      const run = await runTask(tb.broker, {
        command: path.join(ROOT, 'templates/claude-code/agent.mjs'),
        cwd: repo,
        input: { prompt: 'Look around.' },
        ...(tools ? { tools: [...tools] } : {}),
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: 'dummy',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          CLAUDE_BIN: claude.bin,
        },
        timeoutMs: 150_000,
        retries: 0,
      });
      expect(run.error, JSON.stringify(run.error?.payload ?? run.snapshot.stderrTail)).toBeUndefined();
      expect((run.payload?.data as { text: string }).text).toContain('Nothing to do here.');
      // Claude Code has exited (the task's processes are gone): every hook it would run has run.
      expect(fs.readdirSync(markers).sort()).toEqual(['user-SessionStart']);
    },
    TEST_TIMEOUT_MS,
  );
});
