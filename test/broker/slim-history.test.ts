/**
 * Issue 27: a finished task leaves memory for history once its processes are gone — only what the
 * list and its details need stays: the snapshot (a small result inline), the log, the attachments'
 * content, and what a Retry needs beyond the stored spec. Not its Task, not the caller's whole
 * environment, not a big input. Before, every finished task was kept whole until the history limit.
 */
import { describe, expect, test } from 'vitest';
import type { TaskRegistry, Registered } from '../../src/broker/history/registry.js';
import type { TaskBroker } from '../../src/broker/index.js';
import { createBrokerBridge } from '../../src/hub/broker-bridge.js';
import { createTestBroker, fixture, tempDir } from '../helpers/core.js';

const registryOf = (broker: TaskBroker) => (broker as unknown as { registry: TaskRegistry<Registered> }).registry;

describe('a finished task in memory is slim', () => {
  test('no Task, no caller environment, no big input is kept; the list, details, result and Retry still work', async () => {
    const { broker } = createTestBroker({ dataDir: tempDir() });
    await broker.ready;
    const secret = 'caller-value-0123456789';
    // Not asked for by the agent, so only the caller's environment holds it.
    const unasked = 'caller-unasked-value-9876543210';
    const bigInput = { text: 'i'.repeat(200_000) };
    const handle = broker.submit({
      command: fixture('env-echo.mjs'),
      args: ['EXPLICIT_VAR', 'CALLER_VAR'],
      env: { EXPLICIT_VAR: 'explicit' },
      baseEnv: { ...(process.env as Record<string, string>), CALLER_VAR: secret, UNASKED_VAR: unasked },
      input: bigInput,
      askTimeoutMs: 12_345,
      label: 'slim',
    });
    const payload = await handle.result;
    await handle.finished;
    expect(payload.data).toEqual({ EXPLICIT_VAR: 'explicit', CALLER_VAR: secret });

    const registry = registryOf(broker);
    expect(registry.live.has(handle.id)).toBe(false);
    const stored = registry.history.get(handle.id)!;
    expect(Object.keys(stored).sort()).toEqual(['retired', 'snapshot', 'spec']);
    expect(stored.snapshot.state).toBe('succeeded');
    // What is kept, serialized: the result and the log are small, the caller's environment and the big input are not in it.
    const kept = JSON.stringify({ ...stored, retired: { ...stored.retired, attachments: undefined } });
    expect(kept).not.toContain(unasked);
    expect(kept).not.toContain('iiiiiiiiii');
    expect(kept.length).toBeLessThan(8 * 1024);

    // The list, the details, the result.
    const page = broker.taskPage({ limit: 5 });
    expect(page.tasks.map((t) => t.id)).toEqual([handle.id]);
    expect(broker.get(handle.id)).toMatchObject({ id: handle.id, label: 'slim', state: 'succeeded' });
    const details = await createBrokerBridge(broker, { mode: 'headless', version: 'test', logPath: '' }).getTask(handle.id);
    expect(details.task).toMatchObject({ id: handle.id, state: 'succeeded', result: { status: 'success' } });
    expect(details.log).toEqual(stored.retired!.log);
    expect(broker.result(handle.id)).toMatchObject({ status: 'success', data: { EXPLICIT_VAR: 'explicit', CALLER_VAR: secret } });

    // Retry: the same command line, explicit environment and settings; the hub's environment, not the caller's.
    const again = broker.retry(handle.id);
    const second = await again.result;
    await again.finished;
    expect(second.data).toEqual({ EXPLICIT_VAR: 'explicit', CALLER_VAR: null });
    const respec = registry.specToRetry(handle.id);
    expect(respec).toMatchObject({ env: { EXPLICIT_VAR: 'explicit' }, askTimeoutMs: 12_345, label: 'slim' });
    expect(respec).not.toHaveProperty('baseEnv');
    await broker.close();
  });
});
