/**
 * A refusal by the hub's run policy, as a gateway on the hub answers it (real `serve` and `gateway`
 * processes): a 403 in the API's own error shape that names the hub's config file and when the hub
 * read it, never a 500; the hub reads its config file again when it changes, so a model added there
 * later runs without a restart; and a refusal is never replayed to a copy of the request.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../helpers/core.js';
import { hubEnv, printed, start, startHub } from '../hub/control/hub-process.js';
import { raw, STANDIN_AGENT, userMessage } from './helpers.js';

describe('a refusal by the hub', () => {
  test('is a 403 naming the hub’s config file; the model added there later runs at once, the refusal not replayed', async () => {
    const hub = hubEnv();
    const hubConfig = path.join(tempDir('bc-gw-refuse-'), 'config.yaml');
    fs.writeFileSync(hubConfig, JSON.stringify({ gateway: { models: {} } }));
    hub.env.BACKCHANNEL_CONFIG = hubConfig;
    await startHub(hub);

    const dir = tempDir('bc-gw-refuse-');
    const model = { command: STANDIN_AGENT, env: { GATEWAY_STANDIN: 'echo' } };
    const gatewayConfig = path.join(dir, 'gateway.yaml');
    fs.writeFileSync(gatewayConfig, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: { echo: model } }));
    const gateway = start(['gateway', '--config', gatewayConfig], hub.env);
    const baseURL = await printed(gateway, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');

    const body = { model: 'echo', messages: userMessage('refused?') };
    const refused = await raw(`${baseURL}/chat/completions`, body);
    expect(refused.status).toBe(403);
    expect(refused.headers['x-should-retry']).toBe('false');
    expect(refused.json.error).toMatchObject({ type: 'invalid_request_error', code: 'refused' });
    expect(refused.json.error.message).toContain('The model `echo` may not run');
    expect(refused.json.error.message).toContain(`the hub read ${hubConfig} at `);
    expect(refused.json.error.message).toContain("the hub's config file");
    const background = await raw(`${baseURL}/responses`, { model: 'echo', input: 'refused?', background: true });
    expect(background.status).toBe(403);
    expect(background.json.error).toMatchObject({ code: 'refused', message: expect.stringContaining(`the hub read ${hubConfig} at `) });
    const anthropic = await raw(`${baseURL}/messages`, { model: 'echo', max_tokens: 10, messages: userMessage('refused?') });
    expect(anthropic.status).toBe(403);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'permission_error' } });

    // The owner adds the model to the hub's file: the same request, at once, runs.
    fs.writeFileSync(hubConfig, JSON.stringify({ gateway: { models: { echo: model } } }));
    const answered = await raw(`${baseURL}/chat/completions`, body);
    expect(answered.status, answered.text).toBe(200);
    expect(answered.json.choices[0].message.content).toBe('Hello: refused?');
  });
});
