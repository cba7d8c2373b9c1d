/**
 * Background responses on a hub, all real processes (`backchannel serve`, `backchannel gateway`):
 * the response is a hub task, listed by `backchannel tasks`; it outlives the gateway that created it,
 * and a gateway started after it (the first one killed) answers for it: still running, then completed
 * with the whole answer. A hub that goes away is a 503 for its responses, not their end: the hub
 * started again answers for them from its history.
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, test } from 'vitest';
import type { TaskSnapshot } from '../../src/model/task.js';
import { tempDir, waitFor } from '../helpers/core.js';
import { cli, hubEnv, printed, start, startHub, type HubEnv } from '../hub/control/hub-process.js';
import { slowPids, standinModels } from './helpers.js';

/** Directories of this file's stand-ins: their pids are killed after each test, whatever happened. */
const dirs: string[] = [];
afterEach(() => {
  for (const { pid, grandchild } of dirs.splice(0).flatMap((dir) => slowPids(dir))) {
    for (const id of [pid, grandchild]) {
      try {
        // Only if that pid is still a stand-in of ours (not a reused pid).
        const command = fs.readFileSync(`/proc/${id}/cmdline`, 'utf8');
        if (command.includes('agent.mjs') || command.includes('setInterval')) process.kill(id, 'SIGKILL');
      } catch {
        // already gone, as it should be
      }
    }
  }
});

async function startGateway(hub: HubEnv, dir: string) {
  const config = path.join(dir, 'gateway.yaml');
  fs.writeFileSync(config, JSON.stringify({ port: 0, auth: 'none', default_model: 'echo', models: standinModels(dir) }));
  const proc = start(['gateway', '--config', config], hub.env);
  const baseURL = await printed(proc, /Backchannel gateway: (\S+)/, 'the gateway to print its URL');
  return { proc, openai: new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 }) };
}

async function tasksOf(env: NodeJS.ProcessEnv): Promise<TaskSnapshot[]> {
  const { code, stdout, stderr } = await cli(['tasks', '--json', '--limit', '100'], env);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as TaskSnapshot[];
}

describe('background responses on a hub', () => {
  test('a response outlives the gateway that created it: the next gateway retrieves it running, then completed', async () => {
    const hub = hubEnv();
    await startHub(hub);
    const dir = tempDir('bc-gw-hub-bg-');
    dirs.push(dir);
    const first = await startGateway(hub, dir);
    const created = await first.openai.responses.create({ model: 'slow', input: 'outlive me', background: true });
    const done = await first.openai.responses.create({ model: 'echo', input: 'kept', background: true });
    await waitFor(async () => (await first.openai.responses.retrieve(done.id)).status === 'completed', 'the echo to complete');
    await waitFor(() => slowPids(dir).length === 1, 'the slow agent to start');
    first.proc.child.kill('SIGKILL');
    await first.proc.exited;

    const second = await startGateway(hub, dir);
    expect(await second.openai.responses.retrieve(done.id)).toMatchObject({ status: 'completed', output_text: 'Hello: kept' });
    expect((await second.openai.responses.retrieve(created.id)).status).toBe('in_progress');
    const task = (await tasksOf(hub.env)).find((t) => created.id === `resp_${t.id.replace(/-/g, '')}`);
    expect(task).toMatchObject({ state: 'running', tags: { api: 'responses', background: 'true' } });
    fs.writeFileSync(path.join(dir, 'release'), '');
    let answer = await second.openai.responses.retrieve(created.id);
    await waitFor(
      async () => (answer = await second.openai.responses.retrieve(created.id)).status === 'completed',
      'the response to complete',
    );
    expect(answer.output_text).toBe('working, done');
  });

  test('a hub that goes away is a 503, not the response’s end; the hub started again answers for it from its history', async () => {
    const hub = hubEnv();
    const firstHub = await startHub(hub);
    const dir = tempDir('bc-gw-hub-bg-');
    dirs.push(dir);
    const gateway = await startGateway(hub, dir);
    const created = await gateway.openai.responses.create({ model: 'slow', input: 'hold', background: true });
    await waitFor(() => slowPids(dir).length === 1, 'the slow agent to start');
    firstHub.child.kill('SIGKILL');
    await firstHub.exited;
    fs.writeFileSync(path.join(dir, 'release'), ''); // the hub's orphaned stand-in ends itself
    // Once the gateway has seen its hub go (its follow stream breaks), a retrieve is a 503.
    await waitFor(
      () =>
        gateway.openai.responses.retrieve(created.id).then(
          () => false,
          (e: unknown) => e instanceof OpenAI.APIError && e.status === 503,
        ),
      'a retrieve to say the hub is gone',
    );

    await startHub(hub);
    // The new hub recovered the task from its journal: its end is the hub's word, not the lost stream's.
    let again = await gateway.openai.responses.retrieve(created.id);
    await waitFor(
      async () => ['failed', 'completed'].includes((again = await gateway.openai.responses.retrieve(created.id)).status!),
      'the response to show how the task ended',
    );
    const task = (await tasksOf(hub.env)).find((t) => created.id === `resp_${t.id.replace(/-/g, '')}`)!;
    expect(again.status).toBe(task.state === 'succeeded' ? 'completed' : 'failed');
    if (again.status === 'failed') expect(again.error?.message).not.toContain('could not follow');
  });
});
