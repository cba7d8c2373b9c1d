/**
 * One hub, four front-ends in the same panel: a running `backchannel serve`, a task started from
 * another process with `backchannel run --detach`, one started by an MCP client through
 * `backchannel mcp`, and a model request to `backchannel gateway`. All show in the panel (Chromium)
 * and in `backchannel tasks`; `cancel` from the terminal ends one, and `wait` exits with 130 for it
 * and 0 for another.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expect, test, type Page } from '@playwright/test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, scratchDir, startServe, type Serve } from './serve.js';

const BIN = path.join(ROOT, 'bin', 'backchannel.js');
let dir: string;
let serve: Serve | undefined;
let client: Client | undefined;
let gateway: ChildProcess | undefined;

test.afterAll(async () => {
  await client?.close();
  if (gateway && gateway.exitCode === null) {
    const gone = new Promise((resolve) => gateway!.once('exit', resolve));
    gateway.kill('SIGTERM');
    await gone;
  }
  await serve?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const badge = (page: Page, label: string) =>
  page.locator('li.task', { has: page.locator('.task-label', { hasText: label }) }).locator('.badge');

test('tasks from the terminal, an MCP client and the gateway show in the same panel; cancel and wait work from the terminal', async ({
  page,
}) => {
  dir = scratchDir();
  const dataDir = path.join(dir, 'data');
  serve = await startServe(dataDir);
  const env = { ...process.env, BACKCHANNEL_CONTROL: path.join(dataDir, 'control.sock') } as Record<string, string>;
  const cli = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { env, cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  await page.goto(serve.url);

  const detached = cli('run', '--detach', '--label', 'Started from a terminal', '--', path.join(ROOT, 'test/fixtures/cancellable.mjs'));
  expect(detached.status, detached.stderr).toBe(0);
  const id = detached.stdout.trim();
  await expect(badge(page, 'Started from a terminal')).toHaveText('Running');

  client = new Client({ name: 'e2e', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: ROOT }));
  const started = await client.callTool({
    name: 'start_task',
    arguments: { command: path.join(ROOT, 'test/fixtures/sdk-progress.mjs'), label: 'Started by an MCP client' },
  });
  const mcpId = JSON.parse((started.content as Array<{ text: string }>)[0]!.text).task_id as string;
  await expect(badge(page, 'Started by an MCP client')).toHaveText('Succeeded');

  const config = path.join(dir, 'gateway.yaml');
  const agent = { command: path.join(ROOT, 'test/fixtures/gateway/agent.mjs'), env: { GATEWAY_STANDIN: 'echo' } };
  fs.writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: { echo: agent } }));
  gateway = spawn(process.execPath, [BIN, 'gateway', '--config', config], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let banner = '';
  gateway.stdout!.on('data', (chunk: Buffer) => (banner += chunk.toString()));
  await expect.poll(() => /Backchannel gateway: (\S+)/.exec(banner)?.[1], { timeout: 20_000 }).toBeTruthy();
  const baseURL = /Backchannel gateway: (\S+)/.exec(banner)![1]!;
  const answer = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'echo', messages: [{ role: 'user', content: 'Asked through the gateway' }] }),
  });
  expect(((await answer.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(
    'Hello: Asked through the gateway',
  );
  await expect(badge(page, 'gateway echo: Asked through the gateway')).toHaveText('Succeeded');

  const listed = cli('tasks');
  expect(listed.stdout).toContain('Started from a terminal');
  expect(listed.stdout).toContain('Started by an MCP client');
  expect(listed.stdout).toContain('gateway echo: Asked through the gateway');

  expect(cli('cancel', id.slice(0, 16)).status).toBe(0);
  await expect(badge(page, 'Started from a terminal')).toHaveText('Cancelled');
  expect(cli('wait', id).status).toBe(130);
  expect(cli('wait', mcpId).status).toBe(0);
});
