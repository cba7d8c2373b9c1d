/** Real OpenCode (pinned) through the gateway's chat completions, as an OpenAI-compatible provider. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { ensureClient } from '../helpers/real-clients.js';
import { standinModels, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const client = ensureClient(...PINS.opencode);
const skip = 'skip' in client ? client.skip : undefined;

describe.skipIf(skip !== undefined)(`OpenCode ${PINS.opencode[1]} ${skip ? `(skipped: ${skip})` : ''}`, () => {
  test('completes a turn through the gateway, and its title request costs no sub-agent run', async () => {
    const dir = tempDir('bc-opencode-');
    const gateway = await startTestGateway({ models: standinModels(dir), api_key: 'k-opencode' }, { dir });
    const config = path.join(dir, 'config', 'opencode');
    fs.mkdirSync(config, { recursive: true });
    // The set-up docs/gateway.md shows.
    fs.writeFileSync(
      path.join(config, 'opencode.json'),
      JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        provider: {
          backchannel: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Backchannel gateway',
            options: { baseURL: gateway.baseURL, apiKey: '{env:BACKCHANNEL_GATEWAY_KEY}' },
            models: { echo: { name: 'echo' } },
          },
        },
        model: 'backchannel/echo',
        small_model: 'backchannel/echo',
      }),
    );
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn((client as { bin: string }).bin, ['run', 'Say hello'], {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          XDG_CONFIG_HOME: path.join(dir, 'config'),
          XDG_DATA_HOME: path.join(dir, 'data'),
          XDG_CACHE_HOME: path.join(dir, 'cache'),
          XDG_STATE_HOME: path.join(dir, 'state'),
          BACKCHANNEL_GATEWAY_KEY: 'k-opencode',
          OPENCODE_DISABLE_AUTOUPDATE: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => (stdout += c));
      child.stderr.on('data', (c) => (stderr += c));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/Hello: /);
    const tasks = gateway.broker.tasks();
    expect(tasks, 'one user prompt is one sub-agent run').toHaveLength(1);
    expect(tasks[0]!.tags).toMatchObject({ api: 'chat', stream: 'true' });
  });
});
