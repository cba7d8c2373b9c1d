/** The `insights` bridge call: the broker's figures through the one route table, its query checked. */
import { describe, expect, test } from 'vitest';
import { dispatch } from '../../src/bridge/calls.js';
import { createBrokerBridge } from '../../src/hub/broker-bridge.js';
import { makeBroker, tempDir } from '../helpers/core.js';
import { writeJournal } from './generate.js';

describe('insights over the bridge', () => {
  test('answers with the broker’s figures, the token budget, and the tasks behind a point', async () => {
    const dataDir = tempDir();
    const [first] = writeJournal(dataDir, [
      { agent: 'a.mjs', model: 'm1', endedAt: '2026-11-02T10:05:00.000Z', durationMs: 100 },
      { agent: 'b.mjs', model: 'm2', endedAt: '2026-11-02T11:05:00.000Z', durationMs: 300, reason: 'stalled' },
    ]);
    const { broker } = makeBroker({ dataDir, tokenBudget: { capacity: 1000, refillPerSecond: 2 } });
    await broker.ready;
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: '0', logPath: '/dev/null' });
    const reply = await dispatch(bridge, 'insights', [{ by: 'model', pick: { hour: '2026-11-02T10:00:00Z' } }]);
    expect(reply.ok).toBe(true);
    const insights = (reply as { value: Awaited<ReturnType<typeof bridge.insights>> }).value;
    expect(insights).toEqual({ ...broker.insights({ by: 'model', pick: { hour: '2026-11-02T10:00:00.000Z' } }) });
    expect(insights.groups.map((g) => g.key)).toEqual(['m1', 'm2']);
    expect(insights.budget).toEqual({ capacity: 1000, refillPerSecond: 2 });
    expect(insights.taskIds).toEqual([first!.id]);
    bridge.close();
  });

  test('refuses a malformed query with invalid_request', async () => {
    const { broker } = makeBroker();
    const bridge = createBrokerBridge(broker, { mode: 'headless', version: '0', logPath: '/dev/null' });
    for (const [query, message] of [
      [{ by: 'label' }, /`by` to be "agent" or "model"/],
      [{ since: 'yesterday' }, /`since` to be an ISO 8601 time/],
      [{ pick: { key: 'x' } }, /`pick.hour`/],
      ['all', /query to be an object/],
    ] as const) {
      const reply = await dispatch(bridge, 'insights', [query]);
      expect(reply).toMatchObject({ ok: false, error: { code: 'invalid_request', message: expect.stringMatching(message) } });
    }
    bridge.close();
  });
});
