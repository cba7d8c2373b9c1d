/** Real Codex (pinned; Responses API only) through the gateway, with a custom provider in config.toml. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { standinModels, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const codex = clientFor(PINS.codex);

describe.skipIf(codex.skip !== undefined)(codex.title, () => {
  test('completes a streamed turn through the gateway with wire_api = "responses"', async () => {
    const dir = tempDir('bc-codex-');
    const gateway = await startTestGateway({ models: standinModels(dir), api_key: 'k-codex' }, { dir });
    const home = path.join(dir, 'codex-home');
    fs.mkdirSync(home);
    // The set-up docs/gateway.md shows.
    fs.writeFileSync(
      path.join(home, 'config.toml'),
      [
        'model = "echo"',
        'model_provider = "backchannel"',
        '',
        '[model_providers.backchannel]',
        'name = "Backchannel gateway"',
        `base_url = "${gateway.baseURL}"`,
        'wire_api = "responses"',
        'env_key = "BACKCHANNEL_GATEWAY_KEY"',
        '',
      ].join('\n'),
    );
    const run = await runCli(codex.bin, ['exec', '--skip-git-repo-check', 'say hi'], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, CODEX_HOME: home, BACKCHANNEL_GATEWAY_KEY: 'k-codex' },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Hello: /);
    expect(run.stdout).toContain('say hi');
    expect(run.stderr).not.toMatch(/Reconnecting/);
    const tasks = await gateway.client.listTasks();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.tags).toMatchObject({ api: 'responses', stream: 'true', session: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });
});
