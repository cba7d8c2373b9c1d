import { rmSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { makeBroker } from '../helpers/core.js';
import { runTask } from '../helpers/broker.js';
import { acpCase, script, type AcpCase } from './acp-helpers.js';

/** Runs a first task, then a follow-up continuing its session with `env` for the agent. */
async function firstThenFollowUp(acp: AcpCase, env: Record<string, string>, steps: unknown[]) {
  const { broker } = makeBroker();
  const first = await runTask(broker, acp.spec(script([{ say: 'noted the colour' }], 'my favourite colour is teal'), { env }));
  const earlier = first.payload!.data as { session_id: string; transcript: unknown[] };
  expect(earlier.transcript).toEqual([
    { role: 'user', text: expect.stringContaining('my favourite colour is teal') },
    { role: 'agent', text: 'noted the colour' },
  ]);
  return {
    earlier,
    env,
    broker,
    next: (state?: string) =>
      runTask(
        broker,
        acp.spec(script(steps, 'what was it?'), {
          env: { ...env, ...(state ? { ACP_FIXTURE_STATE: state } : {}) },
          settings: { session: { id: earlier.session_id, transcript: earlier.transcript } },
        }),
      ),
  };
}

describe('a follow-up continues the same ACP session', () => {
  test('by session/resume when the agent advertises it', async () => {
    const acp = acpCase();
    const { earlier, next } = await firstThenFollowUp(acp, {}, [{ recall: true }]);
    const done = await next();
    const data = done.payload!.data as Record<string, any>;
    expect(data.session_id).toBe(earlier.session_id);
    expect(data.text).toBe('I remember: my favourite colour is teal');
    expect((done.payload!.meta as any).acp.continued_by).toBe('resume');
  });

  test('by session/load otherwise, whose replayed history is not taken as new work', async () => {
    const acp = acpCase();
    const { earlier, next } = await firstThenFollowUp(acp, { ACP_FIXTURE_CAPS: 'load' }, [{ recall: true }]);
    const done = await next();
    const data = done.payload!.data as Record<string, any>;
    expect(data.session_id).toBe(earlier.session_id);
    expect(data.text).toBe('I remember: my favourite colour is teal');
    expect((done.payload!.meta as any).acp.continued_by).toBe('load');
  });

  test('by a replay of the transcript into a new session when neither works', async () => {
    const acp = acpCase();
    const { earlier, next } = await firstThenFollowUp(acp, {}, [{ echoPrompt: true }]);
    // The agent lost its sessions (a new machine, a wiped cache): resume and load both fail.
    rmSync(acp.state, { recursive: true, force: true });
    const done = await next();
    expect(done.error).toBeUndefined();
    const data = done.payload!.data as Record<string, any>;
    expect(data.session_id).not.toBe(earlier.session_id);
    expect((done.payload!.meta as any).acp.continued_by).toBe('replay');
    expect(data.text).toContain('Earlier in this conversation:');
    expect(data.text).toContain('user: my favourite colour is teal');
    expect(data.text).toContain('agent: noted the colour');
    expect(data.text).toContain('what was it?');
  });
});
