/** Real OpenCode (pinned) through the gateway's chat completions, as an OpenAI-compatible provider. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { clientFor, runCli } from '../helpers/real-clients.js';
import { standinModels, STANDIN_AGENT, startTestGateway } from '../gateway/helpers.js';
import { PINS } from './pins.js';

const opencode = clientFor(PINS.opencode);

describe.skipIf(opencode.skip !== undefined)(opencode.title, () => {
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
    const run = await runCli(opencode.bin, ['run', 'Say hello'], {
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
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/Hello: /);
    const tasks = await gateway.client.listTasks();
    expect(tasks, 'one user prompt is one sub-agent run').toHaveLength(1);
    expect(tasks[0]!.tags).toMatchObject({ api: 'chat', stream: 'true' });
  });

  test("bridge mode: the agent's call to OpenCode's write tool writes the file in OpenCode's project, in one task", async () => {
    const dir = tempDir('bc-opencode-bridge-');
    const project = path.join(dir, 'project');
    fs.mkdirSync(project);
    const target = path.join(project, 'hello.txt');
    const writer = { command: STANDIN_AGENT, env: { GATEWAY_STANDIN: 'bridge-write', GATEWAY_PID_DIR: dir, GATEWAY_HOST_FILE: target } };
    const gateway = await startTestGateway({ models: { writer }, api_key: 'k-opencode', session_workspaces: true }, { dir });
    const config = path.join(dir, 'config', 'opencode');
    fs.mkdirSync(config, { recursive: true });
    fs.writeFileSync(
      path.join(config, 'opencode.json'),
      JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        provider: {
          backchannel: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Backchannel gateway',
            options: { baseURL: gateway.baseURL, apiKey: '{env:BACKCHANNEL_GATEWAY_KEY}' },
            models: { writer: { name: 'writer' } },
          },
        },
        model: 'backchannel/writer',
        small_model: 'backchannel/writer',
      }),
    );
    const run = await runCli(opencode.bin, ['run', 'Write hello.txt'], {
      cwd: project,
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
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('bridged\n');
    expect(run.stdout).toMatch(/wrote: /);
    const tasks = await gateway.client.listTasks();
    expect(tasks, 'the whole turn is one task').toHaveLength(1);
    expect(tasks[0]!.tags).toMatchObject({ api: 'chat', mode: 'bridge' });
  });
});
