/**
 * Red-team X1 with the real Codex (pinned 0.171.0): Codex's parser reads a `resume` value shaped like
 * a flag as that flag, so the codex template must never put one there. Straight, the real CLI takes
 * `exec resume --dangerously-bypass-approvals-and-sandbox -- hello` as the flag with `hello` as the
 * session id (it then waits for a prompt on stdin); under the template, such an input fails the task
 * before Codex runs (the fake model gets no request).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, tempDir } from '../helpers/core.js';
import { say, startFakeResponses } from '../helpers/fake-responses.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { runTask, startBroker } from '../helpers/broker.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codex);
const BYPASS = '--dangerously-bypass-approvals-and-sandbox';

function codexHome(dir: string, baseUrl: string): string {
  const home = path.join(dir, 'codex-home');
  fs.mkdirSync(home, { recursive: true });
  const config = ['model = "fake-model"', 'model_provider = "fake"', '', '[model_providers.fake]', 'name = "Fake"'];
  config.push(`base_url = "${baseUrl}"`, 'wire_api = "responses"', 'env_key = "CODEX_FAKE_KEY"', '');
  fs.writeFileSync(path.join(home, 'config.toml'), config.join('\n'));
  return home;
}

describe.skipIf(codex.skip !== undefined)(`${codex.title}: a flag-like resume value`, () => {
  test('is parsed by the real Codex as the flag itself', async () => {
    const dir = tempDir('bc-cx-flag-');
    const fake = await startFakeResponses([{ output: [say('hi')] }]);
    try {
      const env = { PATH: process.env.PATH ?? '', HOME: dir, CODEX_HOME: codexHome(dir, fake.baseUrl), CODEX_FAKE_KEY: 'k' };
      // As the template built it before the fix: `resume <input value> -- <prompt>`.
      const run = await runCli(codex.bin, ['exec', '--json', '--skip-git-repo-check', 'resume', BYPASS, '--', 'hello'], { cwd: dir, env });
      // The flag was taken, `hello` became the session id, and no prompt was left: Codex asks stdin for one.
      expect(run.stderr).toMatch(/Reading prompt from stdin/);
      expect(run.stderr).not.toMatch(/unexpected argument/);
      expect(fake.requests).toEqual([]);
    } finally {
      await fake.close();
    }
  });

  test('fails the codex template task before Codex runs', async () => {
    const dir = tempDir('bc-cx-flag-');
    const fake = await startFakeResponses([{ output: [say('hi')] }]);
    const tb = await startBroker();
    try {
      const run = await runTask(tb.broker, {
        command: path.join(ROOT, 'templates/codex/agent.mjs'),
        cwd: dir,
        input: { prompt: 'hello', resume: BYPASS, skip_git_repo_check: true },
        env: {
          PATH: process.env.PATH ?? '',
          HOME: dir,
          CODEX_HOME: codexHome(dir, fake.baseUrl),
          CODEX_FAKE_KEY: 'k',
          CODEX_BIN: codex.bin,
        },
        timeoutMs: 60_000,
        retries: 0,
      });
      expect(run.error?.message).toMatch(/failed: input "resume" must be a session id/);
      expect(fake.requests).toEqual([]);
    } finally {
      await tb.close();
      await fake.close();
    }
  });
});
