/**
 * The hub's doors under the owner's default run policy (a real headless hub: the panel's HTTP API
 * and the control endpoint): the panel's server judges every submission as the panel's, whatever
 * its body says; a control client is judged by the door it declares (`backchannel run` says `cli`),
 * `control` when it declares none. A refusal is a 403 `refused` / a `refused` BridgeError.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { connectHub } from '../../src/client/hub-client.js';
import { resolveGatewayConfig } from '../../src/gateway/config.js';
import { taskSpecFor } from '../../src/gateway/routes.js';
import { ownerRunPolicy } from '../../src/hub/run-policy.js';
import { defaultDemoAgentsDir, loadPresets } from '../../src/templates/presets.js';
import { fixture, tempDir } from '../helpers/core.js';
import { startTestHeadless, type TestHeadless } from '../helpers/panel.js';

let headless: TestHeadless | undefined;
afterEach(async () => {
  await headless?.stop();
  headless = undefined;
});

/** A hub with the default policy: no config file. */
async function defaultHub(): Promise<{ hub: TestHeadless; socket: string }> {
  const dir = tempDir();
  const socket = path.join(dir, 'run', 'control.sock');
  const config = { path: path.join(dir, 'config.yaml'), exists: false, sections: {} };
  headless = await startTestHeadless({ dir, control: socket, runPolicy: ownerRunPolicy({ config }) });
  return { hub: headless, socket };
}

async function post(hub: TestHeadless, body: unknown): Promise<{ status: number; body: any }> {
  const reply = await fetch(`http://127.0.0.1:${hub.server.port}/api/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-backchannel-token': hub.server.token },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: await reply.json() };
}

describe("the shipped templates' presets", () => {
  test('run from every door in any working directory, the basic preset (its script as the command) included', () => {
    const config = { path: path.join(tempDir(), 'config.yaml'), exists: false, sections: {} };
    const presets = loadPresets(defaultDemoAgentsDir());
    const policy = ownerRunPolicy({ config, presets });
    const elsewhere = tempDir('bc-elsewhere-');
    const basic = presets.find((preset) => preset.name === 'basic')!;
    expect(path.isAbsolute(basic.request.command)).toBe(true);
    for (const name of ['basic', 'raw-node', 'llm-agent']) {
      const { request } = presets.find((preset) => preset.name === name)!;
      expect(policy.judge({ command: request.command, args: request.args ?? [], cwd: elsewhere, origin: 'mcp' }), name).toMatchObject({
        allowed: true,
        rule: { preset: name },
      });
    }
  });
});

describe("the hub's doors", () => {
  test("the panel's API: a command line is refused with 403 `refused`, also when the body claims to be the CLI", async () => {
    const { hub } = await defaultHub();
    for (const origin of [undefined, 'cli']) {
      const reply = await post(hub, { command: 'sh', args: ['-c', 'id'], ...(origin ? { origin } : {}) });
      expect(reply.status).toBe(403);
      expect(reply.body.error).toMatchObject({ code: 'refused', message: expect.stringContaining('refused `sh -c id`') });
      expect(reply.body.error.message).toContain('from the panel');
    }
    const preset = (await hub.bridge.info()).presets[0]!;
    expect((await post(hub, preset.request)).status).toBe(200);
    expect(hub.broker.tasks()).toHaveLength(1);
  });

  test('the control endpoint: a client that declares no door is judged as `control`; `backchannel run` declares `cli`', async () => {
    const { hub, socket } = await defaultHub();
    const client = connectHub(socket);
    try {
      await expect(client.submit({ command: fixture('quick.mjs') })).rejects.toMatchObject({
        code: 'refused',
        message: expect.stringContaining('from the control endpoint'),
      });
      await expect(client.submit({ command: fixture('quick.mjs'), origin: 'mcp' })).rejects.toMatchObject({ code: 'refused' });
      const { id } = await client.submit({ command: fixture('quick.mjs'), origin: 'cli' });
      expect(hub.broker.get(id)).toBeDefined();
    } finally {
      client.close();
    }
  });

  test("the gateway's configured models run from the config file's gateway section; the built-in ones are the shipped templates", () => {
    const dir = tempDir();
    const gateway = { models: { mine: { command: './agents/mine.mjs', args: ['--fast'] }, 'cursor-cli': {} } };
    const config = { path: path.join(dir, 'config.yaml'), exists: true, sections: { gateway } };
    const policy = ownerRunPolicy({ config });
    const routes = resolveGatewayConfig(gateway, {}, dir);
    for (const model of ['mine', 'cursor-cli']) {
      const spec = taskSpecFor(routes, { model, route: routes.models[model]!, prompt: 'hi', messages: [], stream: false });
      expect(spec.origin).toBe('gateway');
      const verdict = policy.judge({ command: spec.command, args: spec.args ?? [], cwd: spec.cwd!, origin: 'gateway', setsEnv: true });
      expect(verdict, model).toMatchObject({ allowed: true });
      // The same command line from MCP: only the template is a preset.
      const fromMcp = policy.judge({ command: spec.command, args: spec.args ?? [], cwd: spec.cwd!, origin: 'mcp' });
      expect(fromMcp.allowed, model).toBe(model === 'cursor-cli');
    }
    // The CLI's path travels in the environment, never in the template's input.
    const cursor = taskSpecFor(routes, {
      model: 'cursor-cli',
      route: routes.models['cursor-cli']!,
      prompt: 'hi',
      messages: [],
      stream: false,
    });
    expect(cursor.input).not.toHaveProperty('bin');
    expect(cursor.env).toMatchObject({ CURSOR_AGENT_BIN: 'agent' });
  });

  test('a model added to the config file after the hub read it runs without a restart; an unreadable change keeps the rules and says so', () => {
    const dir = tempDir();
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(file, JSON.stringify({ gateway: { models: {} } }));
    const saved = process.env.BACKCHANNEL_CONFIG;
    process.env.BACKCHANNEL_CONFIG = file;
    try {
      const policy = ownerRunPolicy({ presets: [] });
      const request = { command: path.join(dir, 'echo.mjs'), args: [], cwd: dir, origin: 'gateway' as const };
      const refused = policy.judge(request);
      expect(refused.allowed).toBe(false);
      expect(refused.allowed === false && refused.message).toContain(`the hub read ${file} at `);
      fs.writeFileSync(file, JSON.stringify({ gateway: { models: { echo: { command: './echo.mjs' } } } }));
      expect(policy.judge(request)).toMatchObject({ allowed: true, rule: { name: 'gateway model echo' } });
      // Half-written: the rules read last still hold; a refusal names the problem.
      fs.writeFileSync(file, 'gateway: [');
      expect(policy.judge(request)).toMatchObject({ allowed: true });
      const other = policy.judge({ ...request, command: path.join(dir, 'other.mjs') });
      expect(other.allowed === false && other.message).toMatch(/its change since could not be read \(.*config\.yaml/);
    } finally {
      if (saved === undefined) delete process.env.BACKCHANNEL_CONFIG;
      else process.env.BACKCHANNEL_CONFIG = saved;
    }
  });
});
