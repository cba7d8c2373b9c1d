/**
 * The follow stream's lines splice a result's JSON in as `payloadJson` made it, so a 10 MB result
 * is serialized once for its follower and its file: the same JSON as `JSON.stringify(event)`.
 */
import { describe, expect, test, vi } from 'vitest';
import type { TaskFeedEvent } from '../../../src/bridge/contract.js';
import { feedLine } from '../../../src/hub/control/follow.js';
import { payloadJson } from '../../../src/model/payload-json.js';
import type { FinalPayload } from '../../../src/protocol/index.js';

const task = {
  id: 't-1',
  label: 'a "quoted" label',
  state: 'succeeded',
  args: ['é', '🙂'],
  attempt: 1,
} as unknown as TaskFeedEvent['task'];

describe('feedLine', () => {
  test('is JSON.stringify(event) with and without a result and an update', () => {
    const small = { task_id: 't-1', status: 'success', data: { text: 'x\n"y"' } } as FinalPayload;
    const big = { task_id: 't-1', status: 'success', data: 'z'.repeat(200_000) } as FinalPayload;
    const events: TaskFeedEvent[] = [
      { task },
      { task: { ...task, result: small }, update: { taskId: 't-1', kind: 'ended', state: 'succeeded', attempt: 1, payload: undefined } },
      { task: { ...task, result: big } },
      { task: { id: 't-2', result: small } as unknown as TaskFeedEvent['task'] },
    ];
    for (const event of events) {
      const line = feedLine(event);
      expect(line.endsWith('\n')).toBe(true);
      expect(line.indexOf('\n')).toBe(line.length - 1);
      expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(event)));
    }
  });

  test('a big result is serialized once: its file reuses the text its follower got', () => {
    const big = { task_id: 't-1', status: 'success', data: 'z'.repeat(200_000) } as FinalPayload;
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      const line = feedLine({ task: { ...task, result: big } });
      const serialized = stringify.mock.calls.filter(([value]) => value === big).length;
      expect(serialized).toBe(1);
      expect(payloadJson(big)).toBe(line.slice(line.indexOf('"result":') + 9, -3));
      expect(stringify.mock.calls.filter(([value]) => value === big).length).toBe(1);
      // Small payloads are not remembered.
      const small = { task_id: 't-1', status: 'success', data: 1 } as FinalPayload;
      payloadJson(small);
      payloadJson(small);
      expect(stringify.mock.calls.filter(([value]) => value === small).length).toBe(2);
    } finally {
      stringify.mockRestore();
    }
  });
});
