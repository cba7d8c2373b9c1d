/**
 * `run --detach --follow-up <task>` on an ACP task: submitted to the hub, it continues the parent's
 * ACP session as the attached `run` does (the parent named as such, not as a worktree to reuse).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../helpers/core.js';
import { cli, hubEnv, startHub } from '../hub/control/hub-process.js';

const AGENT = path.join(ROOT, 'test/fixtures/acp/agent.mjs');

test('run --detach --follow-up continues an ACP task’s session', { timeout: 120_000 }, async () => {
  const hub = hubEnv();
  const sessions = path.join(hub.dir, 'sessions');
  const agents = { fixture: { command: AGENT, env: { ACP_FIXTURE_STATE: sessions } } };
  fs.writeFileSync(hub.env.BACKCHANNEL_CONFIG!, `run_policy:\n  allow:\n    - command: "*"\nacp: ${JSON.stringify({ agents })}\n`);
  await startHub(hub);
  const detached = async (...args: string[]) => {
    const started = await cli(['run', '--detach', '--acp-agent', 'fixture', ...args], hub.env);
    expect(started.code, started.stderr).toBe(0);
    const id = started.stdout.trim();
    return { id, payload: JSON.parse((await cli(['wait', '--json', id], hub.env)).stdout) };
  };
  const first = await detached('--input', '"my favourite colour is teal"');
  expect(first.payload.status).toBe('success');
  const recall = JSON.stringify(`what was it? SCRIPT:${JSON.stringify([{ recall: true }])}`);
  const next = await detached('--follow-up', first.id, '--input', recall);
  expect(next.payload).toMatchObject({ status: 'success', data: { text: 'I remember: my favourite colour is teal' } });
  expect(next.payload.data.session_id).toBe(first.payload.data.session_id);
});
