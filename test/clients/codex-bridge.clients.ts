/**
 * The real Codex (pinned 0.171.0) as a bridged sub-agent: the codex template runs it with the stdio
 * MCP relay (templates/_shared/bridge.mjs), driven by the local fake Responses server, which scripts a
 * call to the bridged `Write` (in the `mcp__backchannel` namespace Codex offers it in). The call reaches
 * the test's tool answerer through the broker, its answer reaches the model, and the scratch checkout
 * Codex ran in has no changed files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { WRITE_TOOL } from '../helpers/client-tools.js';
import { ROOT, tempDir } from '../helpers/core.js';
import { call, say, startFakeResponses } from '../helpers/fake-responses.js';
import { gitIn, makeRepo } from '../helpers/git-repo.js';
import { clientFor } from '../helpers/real-clients.js';
import { runTask, startBroker } from '../helpers/broker.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codex);

describe.skipIf(codex.skip !== undefined)(`${codex.title} as a bridged sub-agent`, () => {
  test("a scripted call to the bridged Write reaches the caller's answerer; the scratch checkout is unchanged", async () => {
    const host = tempDir('bc-cx-host-');
    const target = path.join(host, 'hello.txt');
    const fake = await startFakeResponses([
      { output: [{ ...call('Write', { file_path: target, content: 'hello from codex\n' }), namespace: 'mcp__backchannel' }] },
      { output: [say('Created hello.txt.')] },
    ]);
    const tb = await startBroker();
    try {
      const scratch = makeRepo({ 'README.md': '# scratch\n' });
      const home = tempDir('bc-cx-home-');
      const codexHome = path.join(home, 'codex-home');
      fs.mkdirSync(codexHome);
      const config = ['model = "fake-model"', 'model_provider = "fake"', '', '[model_providers.fake]', 'name = "Fake"'];
      config.push(`base_url = "${fake.baseUrl}"`, 'wire_api = "responses"', 'env_key = "CODEX_FAKE_KEY"', '');
      fs.writeFileSync(path.join(codexHome, 'config.toml'), config.join('\n'));
      const calls: Array<{ name: string; arguments: unknown }> = [];
      const run = await runTask(
        tb.broker,
        {
          command: path.join(ROOT, 'templates/codex/agent.mjs'),
          cwd: scratch,
          input: { prompt: 'Create hello.txt in my project', allow_writes: true },
          tools: [WRITE_TOOL],
          env: { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: codexHome, CODEX_FAKE_KEY: 'k', CODEX_BIN: codex.bin },
          timeoutMs: 150_000,
          retries: 0,
        },
        (update, handle) => {
          if (update.kind !== 'tool_call' || !update.toolCall) return;
          const args = update.toolCall.arguments as { file_path: string; content: string };
          calls.push({ name: update.toolCall.name, arguments: args });
          fs.writeFileSync(args.file_path, args.content);
          tb.broker.answerToolCall(handle.id, update.toolCall.callId, { content: `File created successfully at: ${args.file_path}` });
        },
      );
      expect(run.error, JSON.stringify(run.error?.payload)).toBeUndefined();
      expect(calls).toEqual([{ name: 'Write', arguments: { file_path: target, content: 'hello from codex\n' } }]);
      expect(fs.readFileSync(target, 'utf8')).toBe('hello from codex\n');
      expect((run.payload?.data as { text: string }).text).toBe('Created hello.txt.');
      // Both requests offered the relay's namespace; the second carried the caller's answer.
      for (const request of fake.requests) expect((request.body.tools ?? []).map((t) => t.name)).toContain('mcp__backchannel');
      expect(JSON.stringify(fake.requests[1]!.body.input.at(-1))).toContain(`File created successfully at: ${target}`);
      expect(gitIn(scratch, 'status', '--porcelain', '--untracked-files=all').trim()).toBe('');
    } finally {
      await tb.close();
      await fake.close();
    }
  });
});
