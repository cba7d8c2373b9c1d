/**
 * The real Codex (pinned 0.171.0) run by the codex template in a directory the caller chose, a
 * repository it does not control (issue 36, "Not verified"): the repository's own `.codex/config.toml`
 * (an MCP server, inline hooks, `notify`) and `.codex/hooks.json` are never loaded, in agent mode and
 * in bridge mode, because Codex reads a project's `.codex/` layer only in a project its owner trusted
 * (`[projects."<dir>"] trust_level = "trusted"` in CODEX_HOME, or `codex exec --trust`, which the
 * template never passes). Each would leave a marker file outside the repository; none appears. With
 * the owner's trust the same repository's config does load: trusting it is the owner's decision.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ToolDefinition } from '../../src/model/tools.js';
import { ROOT, tempDir } from '../helpers/core.js';
import { say, startFakeResponses, type FakeResponses } from '../helpers/fake-responses.js';
import { makeRepo } from '../helpers/git-repo.js';
import { clientFor } from '../helpers/real-clients.js';
import { runTask, startBroker, type TestBroker } from '../helpers/broker.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codex);
/** A real Codex run: a few seconds idle, a minute on a busy 2-core machine. */
const TEST_TIMEOUT_MS = 240_000;

const READ: ToolDefinition = { name: 'Read', description: 'Reads a file.', input_schema: { type: 'object', properties: {} } };

/** A repository whose own Codex config would run commands; what ran shows in `markers`. */
function hostileRepo(markers: string): string {
  const server = path.join(markers, '..', 'server.mjs');
  fs.writeFileSync(
    server,
    `import fs from 'node:fs';\nfs.writeFileSync(${JSON.stringify(path.join(markers, 'mcp-server-started'))}, String(process.pid));\n`,
  );
  const touch = (name: string) => `touch ${JSON.stringify(path.join(markers, name)).replace(/"/g, "'")}`;
  const config = [
    `notify = ["touch", ${JSON.stringify(path.join(markers, 'notify'))}]`,
    '',
    '[mcp_servers.repo]',
    `command = ${JSON.stringify(process.execPath)}`,
    `args = [${JSON.stringify(server)}]`,
    '',
    '[[hooks.SessionStart]]',
    '[[hooks.SessionStart.hooks]]',
    'type = "command"',
    `command = ${JSON.stringify(touch('toml-SessionStart'))}`,
    '',
  ].join('\n');
  const hooksJson = {
    hooks: Object.fromEntries(
      ['SessionStart', 'UserPromptSubmit', 'Stop'].map((event) => [
        event,
        [{ hooks: [{ type: 'command', command: touch(`json-${event}`) }] }],
      ]),
    ),
  };
  return makeRepo({
    'README.md': '# a repository the caller picked\n',
    '.codex/config.toml': config,
    '.codex/hooks.json': JSON.stringify(hooksJson),
  });
}

/** The owner's CODEX_HOME: the fake model as provider, and optionally the repository trusted. */
function codexHome(dir: string, baseUrl: string, trusted?: string): string {
  const home = path.join(dir, 'codex-home');
  fs.mkdirSync(home, { recursive: true });
  const config = ['model = "fake-model"', 'model_provider = "fake"', '', '[model_providers.fake]', 'name = "Fake"'];
  config.push(`base_url = "${baseUrl}"`, 'wire_api = "responses"', 'env_key = "CODEX_FAKE_KEY"', '');
  if (trusted) config.push(`[projects.${JSON.stringify(trusted)}]`, 'trust_level = "trusted"', '');
  fs.writeFileSync(path.join(home, 'config.toml'), config.join('\n'));
  return home;
}

describe.skipIf(codex.skip !== undefined)(`${codex.title} in a caller-chosen repository`, () => {
  let tb: TestBroker;
  let model: FakeResponses;
  beforeAll(async () => {
    tb = await startBroker();
    model = await startFakeResponses(Array.from({ length: 20 }, () => ({ output: [say('Nothing to do here.')] })));
  });
  afterAll(async () => {
    await model.close();
    await tb.close();
  });

  /** Runs the template in a fresh hostile repository; the markers left once its processes are gone. */
  async function markersOf(tools: ToolDefinition[] | undefined, trust: boolean): Promise<{ markers: string[]; text: string }> {
    const dir = tempDir('bc-cx-proj-');
    const markers = path.join(dir, 'markers');
    fs.mkdirSync(markers);
    const repo = hostileRepo(markers);
    const run = await runTask(tb.broker, {
      command: path.join(ROOT, 'templates/codex/agent.mjs'),
      cwd: repo,
      input: { prompt: 'Look around.' },
      ...(tools ? { tools } : {}),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        CODEX_HOME: codexHome(dir, model.baseUrl, trust ? fs.realpathSync(repo) : undefined),
        CODEX_FAKE_KEY: 'k',
        CODEX_BIN: codex.bin,
      },
      timeoutMs: 150_000,
      retries: 0,
    });
    const text = run.error ? `failed: ${run.error.message}` : (run.payload?.data as { text: string }).text;
    return { markers: fs.readdirSync(markers).sort(), text };
  }

  test.each([
    ['agent mode', undefined],
    ['bridge mode', [READ]],
  ] as const)(
    "in %s, the repository's .codex/config.toml and hooks.json never load",
    async (_mode, tools) => {
      const { markers, text } = await markersOf(tools ? [...tools] : undefined, false);
      expect(text).toContain('Nothing to do here.');
      expect(markers).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a repository its owner trusted in CODEX_HOME does load its config (the control: the markers are real)',
    async () => {
      const { markers } = await markersOf(undefined, true);
      // Its MCP server starts (its hooks still wait for Codex's own per-hook trust).
      expect(markers).toContain('mcp-server-started');
    },
    TEST_TIMEOUT_MS,
  );
});
